/** What a benchmark scenario is: a fixed name and rows of figures, each row paired with its peer where one exists. */
export type Row = Record<string, string | number | null>;

export type Scenario = {
  readonly name: string;
  readonly description: string;
  /** Runs only when named (`npm run bench -- soak`), not in a run of every scenario: it takes half an hour. */
  readonly onlyWhenNamed?: boolean;
  run(): Promise<Row[]>;
};
