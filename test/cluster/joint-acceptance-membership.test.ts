import "../e2e/acceptance/membership.test.js";
