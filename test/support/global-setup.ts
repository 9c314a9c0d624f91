// Placeholder replaced below by the leak check.
export default function setup(): void {}
