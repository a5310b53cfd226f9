// The operator's tests (make eval's strongest set-up): inputs the project's own tests do not use.
var assert = require("assert");
var Complex = require("../complex");

describe("operator hidden", function () {
  it("neg negates both parts", function () {
    assert.strictEqual(new Complex(2, 3).neg().toString(), "-2 - 3i");
    assert.strictEqual(new Complex(-4, -0.5).neg().toString(), "4 + 0.5i");
  });
  it("conjugate negates the imaginary part", function () {
    assert.strictEqual(new Complex(2, 5).conjugate().toString(), "2 - 5i");
  });
});
