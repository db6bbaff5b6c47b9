// The fuzz harness (test/helpers/fuzz-harness.ts) on every operation of the developer API (/api/v2): no answer
// is a 5xx, every refusal is Shape B with API-Version, and nothing the client sent or any credential reaches the
// log. The portal, management, operator and public routes are fuzzed by fuzz-portal.test.ts.
import { fuzzSuite } from './helpers/fuzz-harness.ts';

fuzzSuite('fuzzing every operation of the developer API', (path) => path.startsWith('/api/v2/'), 60);
