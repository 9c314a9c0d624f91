// The one Node module the contract's types reach (src/contract/allow-list.ts checks addresses
// with it): declared here with what that file uses, so the dashboard is checked against the
// contract's types with the browser's library alone. Only types are imported: nothing of it is bundled.
declare module 'node:net' {
  const net: { isIPv4(text: string): boolean; isIPv6(text: string): boolean };
  export default net;
}
