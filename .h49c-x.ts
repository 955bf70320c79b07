import pg from 'pg';
import { readCatalog, distributionProblems, distributionPlan, renderDistributionPlan } from './framework/schema/distribution.ts';
const c = new pg.Client({ connectionString: process.argv[2] }); await c.connect();
const cat = await readCatalog(c);
console.log(distributionProblems(cat).join('\n'));
console.log(renderDistributionPlan(distributionPlan(cat)));
await c.end();
