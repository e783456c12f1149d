// Seeded text for the token-counting tests: the same corpus every run, with English, CJK, kana,
// emoji (ZWJ sequences, flags, skin tones), code, numbers, odd spaces and long words.

/** mulberry32: a seeded generator, so every run sees the same corpus. */
export function seeded(seed: number): (n: number) => number {
  return (n) => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
  };
}

/** Ordinary text: English, CJK, emoji, code, numbers, odd spaces, words of up to 120 letters. */
export function ordinaryText(rnd: (n: number) => number, length: number): string {
  const letters = (n: number, from: number, span: number) => Array.from({ length: n }, () => String.fromCodePoint(from + rnd(span))).join("");
  const words = [
    () => ["the", "Quick", "brown", "fox", "jumps", "over", "lazy", "dogs", "it's", "WE'LL", "they're", "naïve", "über"][rnd(13)]!,
    () => letters(1 + rnd(40), 0x4e00, 20000) + ["，", "。", "！", "、", ""][rnd(5)],
    () => letters(1 + rnd(20), 0x3041, 80) + "です。",
    () => ["🙂", "👍🏽", "👨‍👩‍👧", "🇯🇵", "✨✨", "🔥"][rnd(6)]!,
    () => ["const x = foo(bar);", "if (a >= b) {", "return [1, 2, 3];", "}", "\tdef f(x):", "<div class=\"a\">", "SELECT * FROM t;", "{\"k\": null}"][rnd(8)]!,
    () => String(rnd(10 ** (1 + rnd(9)))) + ["", ".5", ",000", "%"][rnd(4)],
    () => letters(60 + rnd(61), 0x61, 26),
    () => ["<|endoftext|>", "<|im_start|>", "e\u0301", "ﬁ", "١٢٣", "Ⅻ", "—", "…", "https://example.com/a?b=c&d=e"][rnd(9)]!,
    () => JSON.stringify(Array.from({ length: 1 + rnd(30) }, (_, i) => ({ id: i, ok: rnd(2) === 1, tag: letters(3, 0x61, 26) }))),
    () => "\n" + " ".repeat(60 + rnd(60)) + "return;",
  ];
  const gaps = [" ", " ", " ", "\n", "\n\n", "  ", "\t", " \n", "\r\n", ", ", ". ", "\u00a0", "\u3000", "\n    "];
  let text = "";
  while (text.length < length) text += words[rnd(words.length)]!() + gaps[rnd(gaps.length)]!;
  return text;
}

/** `units` UTF-16 units of random code points from [from, from + span), built with little garbage. */
export function randomRun(rnd: (n: number) => number, units: number, from: number, span: number): string {
  const codes = new Uint16Array(units);
  for (let i = 0; i < units; ) {
    const point = from + rnd(span);
    if (point > 0xffff && i + 1 < units) {
      codes[i++] = 0xd800 + ((point - 0x10000) >> 10);
      codes[i++] = 0xdc00 + ((point - 0x10000) & 0x3ff);
    } else codes[i++] = point > 0xffff ? 0x61 : point;
  }
  return new TextDecoder("utf-16le").decode(codes);
}
