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

// The tests the observer runs a second time (report names, CLAIM_REPEAT_TESTS), read before
// any test file loads: node:test as the test files get it registers each such test again, in
// the same process, after the others of its describe block (or of its file), the last first.
// A result that depends on how often or in what order the code was called fails one of its
// two runs; a test the code kept from running twice is reported once, and not taken as passed.
const repeat = new Set(
  JSON.parse(process.env.CLAIM_REPEAT_TESTS || "[]").map((name) => name.split(/::(.*)/s)[1]),
);
if (repeat.size) {
  const repeating = repeated(kept.get("node:test"));
  kept.set("node:test", repeating);
  // node --test's process for one test file (node's own variable); the hook costs a thread.
  if (process.env.NODE_TEST_CONTEXT && loadedAsModule(process.argv[1])) moduleHook(repeating);
}

// Whether node loads the file as an ES module: by its extension, else by the nearest
// package.json's "type" (one that cannot be read: as a module, to be safe).
function loadedAsModule(file) {
  if (typeof file !== "string" || /\.c[jt]s$/.test(file)) return false;
  if (/\.m[jt]s$/.test(file)) return true;
  const path = require("node:path");
  for (let folder = path.dirname(path.resolve(file)); ; folder = path.dirname(folder)) {
    try {
      const text = require("node:fs").readFileSync(path.join(folder, "package.json"), "utf8");
      return JSON.parse(text).type === "module";
    } catch (error) {
      if (error.code !== "ENOENT" && error.code !== "ENOTDIR") return true;
    }
    if (path.dirname(folder) === folder) return false;
  }
}

function repeated(real) {
  const titles = []; // the describe blocks being declared, outermost first
  const queues = [[]]; // per block being declared, the tests to declare again at its end
  let flushing = false;

  function declared(args) {
    const fn = args.find((arg) => typeof arg === "function");
    const options = args.find((arg) => typeof arg === "object" && arg !== null) ?? {};
    const named = args.find((arg) => typeof arg === "string");
    return { fn, options, name: named ?? (fn && fn.name) ?? "<anonymous>" };
  }
  function again(queue) {
    for (const declare of queue.reverse()) declare();
  }
  function test(original) {
    return function (...args) {
      const result = Reflect.apply(original, this, args);
      const { options, name } = declared(args);
      if (!options.skip && !options.todo && repeat.has([...titles, name].join(" > "))) {
        const queue = queues[queues.length - 1];
        queue.push(() => Reflect.apply(original, this, args));
        if (queues.length === 1 && !flushing) {
          flushing = true; // the file's own tests: again once the file has declared them all
          setImmediate(() => {
            flushing = false;
            again(queue.splice(0));
          });
        }
      }
      return result;
    };
  }
  function describe(original) {
    return function (...args) {
      const { fn, name } = declared(args);
      if (fn === undefined) return Reflect.apply(original, this, args);
      const inside = function (...inner) {
        titles.push(name);
        const queue = [];
        queues.push(queue);
        let result;
        try {
          result = Reflect.apply(fn, this, inner);
        } finally {
          titles.pop();
          queues.pop();
        }
        if (result && typeof result.then === "function") return result.then(() => again(queue));
        again(queue);
        return result;
      };
      return Reflect.apply(original, this, args.map((arg) => (arg === fn ? inside : arg)));
    };
  }
  function variants(wrap, original) {
    const wrapped = wrap(original);
    // As declared: a getter (node:test's lazy `mock`) stays one, called only when used.
    for (const key of Object.keys(original)) {
      const described = { ...Object.getOwnPropertyDescriptor(original, key), configurable: true };
      if ("value" in described) described.writable = true; // frozen below, once in place
      Object.defineProperty(wrapped, key, described);
    }
    if (typeof original.only === "function") wrapped.only = wrap(original.only);
    return wrapped;
  }
  const wrappedTest = variants(test, real.test);
  const wrappedDescribe = variants(describe, real.describe);
  const module = variants(test, real);
  const replaced = { test: wrappedTest, it: variants(test, real.it), describe: wrappedDescribe };
  if (real.suite === real.describe) replaced.suite = wrappedDescribe;
  else if (typeof real.suite === "function") replaced.suite = variants(describe, real.suite);
  Object.assign(module, replaced);
  if (real.test === real) module.test = module;
  freeze(module, shared);
  return module;
}

// ES modules import node:test through node's loader, not Module._load: a resolve hook gives
// them a module whose exports are those of the one kept here.
function moduleHook(exports) {
  const key = Symbol.for("completion-claim.node-test");
  Object.defineProperty(globalThis, key, { value: exports });
  const names = Object.keys(exports).filter((name) => /^[A-Za-z_$][\w$]*$/.test(name));
  const body =
    `const kept = globalThis[Symbol.for("completion-claim.node-test")];\nexport default kept;\n` +
    names.map((name) => `export const ${name} = kept[${JSON.stringify(name)}];`).join("\n");
  const url = `data:text/javascript,${encodeURIComponent(body)}`;
  const hooks = `export async function resolve(specifier, context, next) {
    if (specifier === "node:test") return { url: ${JSON.stringify(url)}, shortCircuit: true };
    return next(specifier, context);
  }`;
  require("node:module").register(`data:text/javascript,${encodeURIComponent(hooks)}`);
}

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
