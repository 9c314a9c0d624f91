// The shop app of the demo is the tests' fixture business app too.
export { startShopServer, type ShopServer } from '../../demo/shop-server.js';
