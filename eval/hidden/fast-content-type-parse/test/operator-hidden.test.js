'use strict'

// The operator's tests (make eval's strongest set-up): inputs the project's own tests do not use.
const { test } = require('node:test')
const assert = require('node:assert')
const { parse, safeParse } = require('..')

test('hidden: the first of a duplicate parameter wins', () => {
  assert.deepEqual(parse('text/plain; format=flowed; FORMAT=fixed').parameters, { format: 'flowed' })
  assert.deepEqual(safeParse('application/json; q=1; q=2').parameters, { q: '1' })
})

test('hidden: the media type is lower-cased', () => {
  assert.strictEqual(parse('Application/JSON').type, 'application/json')
  assert.strictEqual(safeParse('TEXT/Plain; a=b').type, 'text/plain')
})
