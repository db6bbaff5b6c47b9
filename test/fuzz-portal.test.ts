// The fuzz harness (test/helpers/fuzz-harness.ts) on every operation of /openapi.json outside the developer
// API: the portal, key and webhook management, the operator API and the public routes. Every refusal is Shape
// A with API-Version; no answer is a 5xx; nothing the client sent or any credential reaches the log.
import { fuzzSuite } from './helpers/fuzz-harness.ts';

fuzzSuite('fuzzing every operation outside the developer API', (path) => !path.startsWith('/api/v2/'), 60);
