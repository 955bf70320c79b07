/** A node of PostgreSQL's `explain (analyze, format json)` plan, the fields the plan tests read. */
export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  'Subplan Name'?: string;
  'Parent Relationship'?: string;
  Plans?: PlanNode[];
}
