// Tests and the demo start Redis the same way.
export { startRedis, type TestRedis } from '../../demo/local-redis.js';
