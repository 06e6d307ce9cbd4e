// Types of tare-worker (hand-written; `npm run typecheck` checks them with tsc against
// test/types-check.ts, which uses the whole API).

/** This library's version, sent in the hello line. */
export const VERSION: string;

/** Returns `value` after storing it where V8 cannot prove nobody reads it: a do-not-optimize helper. */
export function blackBox<T>(value: T): T;

/** The last value given to blackBox and how many were given. */
export function blackBoxSink(): { value: unknown; count: number };

/** What a kernel's stages receive. */
export class State {
  /** The kernel's name. */
  readonly kernel: string;
  /** Loops of the current repetition (0 during setup and teardown). */
  loops: number;
  /** The string value of a declared parameter. */
  param(name: string): string;
  /** A parameter as an integer; anything else fails the stage. */
  intParam(name: string): number;
  /** A parameter as a number. */
  floatParam(name: string): number;
  /** All parameters, in declaration order. */
  readonly params: Record<string, string>;
  /** Bytes one loop processes; samples carry bytes = n × loops. */
  bytesPerLoop(n: number): void;
  /** Items one loop processes; samples carry items = n × loops. */
  itemsPerLoop(n: number): void;
  /** A user metric for the current sample (m.<name>); call it from `after`. */
  metric(name: string, value: number): void;
}

/** A stage; it may be async (its promise is awaited). */
export type Stage = (state: State) => void | Promise<void>;

/** A parameter's default, or its default and a one-line description. */
export type ParamSpec = string | number | { default: string | number; doc?: string };

export interface KernelSpec {
  /** One-line description shown by tare and --list. */
  doc?: string;
  /** Parameters with their defaults, in order. */
  params?: Record<string, ParamSpec> | Array<{ name: string; default: string | number; doc?: string }>;
  /** Once, after tare chose the parameters (untimed). */
  setup?: Stage;
  /** Before each repetition (untimed). */
  init?: Stage;
  /** The timed stage: run the body exactly `loops` times. Give this or `body`. */
  loop?: (state: State, loops: number) => void | Promise<void>;
  /** One iteration; the client loops (a call per iteration). */
  body?: (state: State) => void;
  /** Per-loop input, instead of loop/body: one loop's input, made untimed before every loop. */
  input?: (state: State) => any;
  /** One loop on the input made for it (timed, in batches of `batch`). Give with `input`. */
  each?: (state: State, input: any) => void;
  /** Inputs made before each timed batch of `each` calls (default 8). */
  batch?: number;
  /** After each repetition's timed loop (untimed): report metrics here. */
  after?: Stage;
  /** Once, when tare is done with the kernel. */
  teardown?: Stage;
}

export class Worker {
  constructor();
  /** Declares a kernel; returns the worker for chaining. */
  kernel(name: string, spec: KernelSpec): this;
  /** Serves tare (TARE_WORKER_FD set) or measures standalone with argv; then exits the process. */
  main(argv?: string[]): Promise<void>;
  /** main() without exiting: resolves to the exit status. */
  run(argv?: string[]): Promise<number>;
}
