// Where a text stops being JSON, for the config's parse error (docs/configuration.md#errors). JSON.parse's
// own message quotes the text around the error, and a config file holds keys; this reads the text
// again by the JSON grammar (RFC 8259, as JSON.parse reads it) only to find the place.

/** Line and column (1-based) of the first character at which `text` stops being JSON; undefined
 *  when it is JSON (or nests too deep to tell). */
export function jsonErrorPlace(text: string): { line: number; column: number } | undefined {
  let offset: number | undefined;
  try {
    offset = jsonErrorOffset(text);
  } catch (err) {
    if (err instanceof RangeError) return undefined; // the call stack, on absurd nesting
    throw err;
  }
  if (offset === undefined) return undefined;
  const before = text.slice(0, offset);
  const lineStart = before.lastIndexOf("\n") + 1;
  return { line: before.split("\n").length, column: offset - lineStart + 1 };
}

class Stop {
  constructor(readonly at: number) {}
}

const HEX = /^[0-9a-fA-F]{4}$/;
const ESCAPES = new Set(['"', "\\", "/", "b", "f", "n", "r", "t"]);

function jsonErrorOffset(text: string): number | undefined {
  let i = 0;
  const stop = (): never => {
    throw new Stop(i);
  };
  const space = () => {
    while (i < text.length && (text[i] === " " || text[i] === "\t" || text[i] === "\n" || text[i] === "\r")) i++;
  };
  const expect = (char: string) => (text[i] === char ? i++ : stop());
  const digits = () => {
    const start = i;
    while (i < text.length && text[i]! >= "0" && text[i]! <= "9") i++;
    if (i === start) stop();
  };

  function string(): void {
    expect('"');
    for (;;) {
      if (i >= text.length) stop();
      const code = text.charCodeAt(i);
      if (code === 0x22) return void i++;
      if (code < 0x20) stop();
      if (code !== 0x5c) {
        i++;
        continue;
      }
      i++;
      if (ESCAPES.has(text[i]!)) i++;
      else if (text[i] === "u" && HEX.test(text.slice(i + 1, i + 5))) i += 5;
      else stop();
    }
  }

  function number(): void {
    if (text[i] === "-") i++;
    if (text[i] === "0") i++;
    else digits();
    if (text[i] === ".") {
      i++;
      digits();
    }
    if (text[i] === "e" || text[i] === "E") {
      i++;
      if (text[i] === "+" || text[i] === "-") i++;
      digits();
    }
  }

  function literal(word: string): void {
    for (const char of word) expect(char);
  }

  /** The items of an object or array, after its opening bracket. */
  function items(close: string, item: () => void): void {
    space();
    if (text[i] === close) return void i++;
    for (;;) {
      space();
      item();
      space();
      if (text[i] === ",") i++;
      else return void expect(close);
    }
  }

  function value(): void {
    space();
    const c = text[i];
    if (c === "{") {
      i++;
      items("}", () => {
        string();
        space();
        expect(":");
        value();
      });
    } else if (c === "[") {
      i++;
      items("]", value);
    } else if (c === '"') string();
    else if (c === "-" || (c !== undefined && c >= "0" && c <= "9")) number();
    else if (c === "t") literal("true");
    else if (c === "f") literal("false");
    else if (c === "n") literal("null");
    else stop();
  }

  try {
    value();
    space();
    if (i < text.length) stop();
    return undefined;
  } catch (err) {
    if (err instanceof Stop) return err.at;
    throw err;
  }
}
