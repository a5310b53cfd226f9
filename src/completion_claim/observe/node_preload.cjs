// The observer's preload for every Node test run (issue 30): node loads it through NODE_OPTIONS'
// --require, from the observer's read-only folder, before any test file or the code under test,
// in every node process of the run (node --test's process per test file, jest's and vitest's
// workers, mocha's process). It freezes the assertion and runner modules the tests use, so the
// code under test cannot replace what a test calls: `require("node:assert").strictEqual = ...`
// is ignored (a TypeError in strict mode), Object.defineProperty on them throws, and node's
// module loader, replaced, still gives these modules as frozen here.
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

const kept = new Map();
for (const name of MODULES) {
  const exports = require(name);
  freeze(exports, shared);
  kept.set(name, exports).set(name.slice("node:".length), exports);
}
kept.delete("test"); // without its scheme, "test" is a package's name, not node's module

// A test file that loads the code before node:assert would otherwise get whatever module loader
// the code set: Module._load and Module.prototype.require become accessors whose value always
// answers these names with the frozen modules, and passes any other request on to the loader
// last set, so a test double of another module (proxyquire, mock-require) keeps working.
const Module = require("node:module");
function guard(owner, key) {
  let current = owner[key];
  const guards = new WeakMap();
  function guarded(loader) {
    if (!guards.has(loader)) {
      guards.set(loader, function (request) {
        const module = kept.get(request);
        return module !== undefined ? module : Reflect.apply(loader, this, arguments);
      });
    }
    return guards.get(loader);
  }
  Object.defineProperty(owner, key, {
    configurable: false,
    enumerable: true,
    get: () => guarded(current),
    set: (loader) => {
      if (typeof loader !== "function") throw new TypeError(`${key} must be a function`);
      current = loader;
    },
  });
}
guard(Module, "_load");
guard(Module.prototype, "require");
