// A prompt's tokens known only as well as a decision needs. Each message starts as its byte bound
// (a token is at least one UTF-8 byte) and is counted a part at a time on demand: between parts its
// tokens lie between what is counted so far and that plus the bytes not counted yet. A question
// such as "do these messages fit in N tokens?" counts until the bounds answer it, and a count once
// made is kept for the next question (and, for a conversation's messages, for its next request).
import {
  createPacer,
  countParts,
  countedText,
  boundMessage,
  partTokens,
  MESSAGE_OVERHEAD,
  type ChatMessage,
  type Pacer,
  type Part,
  type PartCosts,
  type TokenizerName,
} from "./counter.js";

/** Exact counts of a conversation's messages kept between its requests (see history-counts.ts). */
export interface KnownCounts {
  /** the key under which `text`'s count is kept */
  keyOf(text: string): string;
  get(key: string): number | undefined;
  set(key: string, tokens: number): void;
}

/** One message's tokens (as countMessage counts them, plus its parts' worst case), narrowed part by part. */
class MessageTally {
  lower: number;
  upper: number;
  /** the worst case of its parts that are not text: known at once, never counted */
  private readonly fixed: number;
  private parts: Generator<Part, void> | undefined;
  private text = "";
  private at = 0;
  private key: string | undefined;

  constructor(
    private readonly message: ChatMessage,
    private readonly tokenizer: TokenizerName,
    private readonly known: KnownCounts | undefined,
    costs: PartCosts | undefined,
  ) {
    this.fixed = partTokens(message, costs);
    this.lower = MESSAGE_OVERHEAD + this.fixed;
    this.upper = boundMessage(message, costs);
  }

  get done(): boolean {
    return this.lower === this.upper;
  }

  /** Counts one more part. The first call only makes the text and looks it up among the known
   *  counts: for a message of megabytes, work enough for one turn of the event loop. */
  step(): void {
    if (!this.parts) {
      this.text = countedText(this.message);
      this.key = this.known?.keyOf(this.text);
      const known = this.key === undefined ? undefined : this.known!.get(this.key);
      if (known !== undefined) {
        this.lower = this.upper = known + this.fixed;
        return;
      }
      this.parts = countParts(this.text, this.tokenizer);
      this.upper = MESSAGE_OVERHEAD + this.fixed + Buffer.byteLength(this.text, "utf8");
      return;
    }
    const next = this.parts.next();
    if (next.done) {
      this.upper = this.lower;
    } else {
      const [tokens, end] = next.value;
      this.lower += tokens;
      this.upper -= Buffer.byteLength(this.text.slice(this.at, end), "utf8") - tokens;
      this.at = end;
    }
    // kept without its parts: the key is the text's, and a message with other parts may share it
    if (this.done && this.key !== undefined) this.known!.set(this.key, this.lower - this.fixed);
  }
}

export interface TallyOptions {
  known?: KnownCounts;
  pacer?: Pacer;
  /** the model's worst case of each part that is not text */
  parts?: PartCosts;
}

/**
 * The tokens of a group of messages, between `lower` and `upper`. Groups of one tally share their
 * messages' counts; a message belongs to one group at a time.
 */
export class TokenGroup {
  lower = 0;
  upper = 0;
  /** messages before this index are counted */
  private next = 0;

  constructor(
    private readonly tallies: MessageTally[],
    private readonly pacer: Pacer,
  ) {
    for (const t of tallies) {
      this.lower += t.lower;
      this.upper += t.upper;
    }
  }

  /** Whether this group's tokens and `extra`'s together are at most `limit`; counts `extra` first,
   *  then this group, only until the answer is known. */
  async fitsWith(extra: TokenGroup | undefined, limit: number): Promise<boolean> {
    const upper = () => this.upper + (extra?.upper ?? 0);
    const lower = () => this.lower + (extra?.lower ?? 0);
    for (const group of extra ? [extra, this] : [this]) {
      while (upper() > limit && lower() <= limit && group.step()) {
        const due = this.pacer.due();
        if (due) await due;
      }
    }
    return upper() <= limit;
  }

  fits(limit: number): Promise<boolean> {
    return this.fitsWith(undefined, limit);
  }

  /** The exact tokens, counting whatever is not counted yet. */
  async count(): Promise<number> {
    while (this.step()) {
      const due = this.pacer.due();
      if (due) await due;
    }
    return this.lower;
  }

  /** Moves `other`'s messages into this group. */
  absorb(other: TokenGroup): void {
    // only messages not counted yet are ever stepped again
    for (let i = other.next; i < other.tallies.length; i++) this.tallies.push(other.tallies[i]!);
    this.lower += other.lower;
    this.upper += other.upper;
  }

  /** Counts one part of the first message not fully counted; false when every message is. */
  private step(): boolean {
    while (this.next < this.tallies.length && this.tallies[this.next]!.done) this.next++;
    const t = this.tallies[this.next];
    if (!t) return false;
    const { lower, upper } = t;
    t.step();
    this.lower += t.lower - lower;
    this.upper += t.upper - upper;
    return true;
  }
}

/** The counts of one request's messages. */
export interface Tally {
  /** a group of the messages at these indices (of the messages the tally was created for) */
  group(indices: Iterable<number>): TokenGroup;
}

export function createTally(messages: ChatMessage[], tokenizer: TokenizerName, opts: TallyOptions = {}): Tally {
  const tallies = new Map<number, MessageTally>();
  const pacer = opts.pacer ?? createPacer();
  const tallyOf = (i: number) => {
    let t = tallies.get(i);
    if (!t) tallies.set(i, (t = new MessageTally(messages[i]!, tokenizer, opts.known, opts.parts)));
    return t;
  };
  return {
    group: (indices: Iterable<number>) => new TokenGroup(Array.from(indices, tallyOf), pacer),
  };
}
