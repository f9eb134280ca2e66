// What the OpenAI SDK tests share: their command line, the check that counts failures, and the
// exit status once main() has run (1 on a failed check or a thrown error).
'use strict';

let failures = 0;

// [baseURL, apiKey] from `node SCRIPT BASE_URL API_KEY`; usage and exit 2 when missing.
function args(script) {
  const [baseURL, apiKey] = process.argv.slice(2);
  if (!baseURL || !apiKey) {
    console.error('usage: node ' + script + ' BASE_URL API_KEY');
    process.exit(2);
  }
  return [baseURL, apiKey];
}

function check(cond, what) {
  if (cond) {
    console.log('ok   ' + what);
  } else {
    console.log('FAIL ' + what);
    failures++;
  }
}

function finish(promise) {
  promise.then(
    () => {
      if (failures > 0) {
        console.log(failures + ' check(s) failed');
        process.exit(1);
      }
      console.log('PASSED');
    },
    (e) => {
      console.log('FAIL: ' + (e && e.stack ? e.stack : e));
      process.exit(1);
    });
}

module.exports = { args, check, finish };
