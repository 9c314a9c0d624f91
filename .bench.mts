import { benchConfinement } from './bench/confinement.ts';
console.log(await benchConfinement());
