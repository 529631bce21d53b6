import "../e2e/acceptance/routing.test.js";
