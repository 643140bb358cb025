// Loaded before Scalar's script on the API docs page (/schema). Scalar validates with zod, which
// probes whether it may compile code with Function() unless told "jitless"; the site's
// Content-Security-Policy allows no eval, and the probe would be reported as a violation.
globalThis.__zod_globalConfig = Object.assign(globalThis.__zod_globalConfig || {}, { jitless: true });
