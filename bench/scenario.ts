/** What a benchmark scenario is: a fixed name and rows of figures, each row paired with its peer where one exists. */
export type Row = Record<string, string | number | null>;

export type Scenario = {
  readonly name: string;
  readonly description: string;
  run(): Promise<Row[]>;
};
