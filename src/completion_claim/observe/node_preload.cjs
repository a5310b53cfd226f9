// The observer's preload for every Node test run (issue 30): node loads it through NODE_OPTIONS'
// --require, from the observer's read-only folder, before any test file or the code under test,
// in every node process of the run (node --test's process per test file, jest's and vitest's
// workers, mocha's process). It freezes the assertion and runner modules the tests use, so the
// code under test cannot replace what a test calls: `require("node:assert").strictEqual = ...`
// is ignored (a TypeError in strict mode), and Object.defineProperty on them throws.
"use strict";

const MODULES = ["node:assert", "node:assert/strict", "node:test"];

// Never frozen: the realm's shared prototypes, which every program may legitimately extend.
const shared = new Set([Object.prototype, Function.prototype, Array.prototype, Error.prototype]);

function freeze(value, seen) {
  if ((typeof value !== "object" && typeof value !== "function") || value === null) return;
  if (seen.has(value)) return;
  seen.add(value);
  // Values only: a getter (node:test's lazy `mock`) is not called, so nothing is created early.
  for (const described of Object.values(Object.getOwnPropertyDescriptors(value))) {
    if ("value" in described) freeze(described.value, seen);
  }
  Object.freeze(value);
}

for (const name of MODULES) freeze(require(name), shared);
