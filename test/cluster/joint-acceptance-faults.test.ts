import "../e2e/acceptance/faults.test.js";
