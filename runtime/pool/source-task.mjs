// Piscina loads a pool task by file name. When Mailcairn runs from its
// TypeScript sources (development, tests), this file registers the tsx loader
// inside the pool thread first and then loads the task named in workerData.
// Built code (`npm run build`) never uses it.
import { register } from 'tsx/esm/api';
import { workerData } from 'piscina';

register();
const task = await import(workerData.entry);
export default task.default;
