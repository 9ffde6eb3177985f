/**
 * BERT's uncased WordPiece tokenizer (as all-MiniLM-L6-v2 was trained with): lower case, accents stripped,
 * punctuation split off, then each word cut into the longest pieces the vocabulary has ("##" marks a piece
 * that continues a word). Ids are the vocabulary's line numbers.
 */
export class WordPiece {
  private readonly ids: Map<string, number>;
  readonly cls: number;
  readonly sep: number;
  private readonly unk: number;

  constructor(vocabulary: string) {
    this.ids = new Map(vocabulary.split('\n').map((token, id) => [token.replace(/\r$/, ''), id]));
    [this.cls, this.sep, this.unk] = ['[CLS]', '[SEP]', '[UNK]'].map((t) => {
      const id = this.ids.get(t);
      if (id === undefined) throw new Error(`The vocabulary has no ${t}.`);
      return id;
    }) as [number, number, number];
  }

  /** `[CLS] pieces… [SEP]`, at most `maxTokens` ids in all. */
  encode(text: string, maxTokens: number): number[] {
    const ids = [this.cls];
    for (const word of basicTokens(text)) {
      for (const id of this.pieces(word)) {
        if (ids.length >= maxTokens - 1) return [...ids, this.sep];
        ids.push(id);
      }
    }
    return [...ids, this.sep];
  }

  private pieces(word: string): number[] {
    const chars = [...word];
    if (chars.length > 100) return [this.unk];
    const pieces: number[] = [];
    for (let start = 0; start < chars.length;) {
      let end = chars.length;
      let found: number | undefined;
      for (; end > start; end--) {
        found = this.ids.get((start > 0 ? '##' : '') + chars.slice(start, end).join(''));
        if (found !== undefined) break;
      }
      if (found === undefined) return [this.unk];
      pieces.push(found);
      start = end;
    }
    return pieces;
  }
}

/** Lower case without accents or control characters, split on spaces and around each punctuation mark. */
function basicTokens(text: string): string[] {
  const folded = text
    .toLowerCase()
    .normalize('NFD')
    .replace(/\p{Mn}/gu, '')
    .replace(/[\p{Cc}\p{Cf}\uFFFD]/gu, (c) => (/\s/.test(c) ? ' ' : ''));
  return folded
    .split(/\s+/)
    .flatMap((word) => word.split(/([\p{P}\p{S}])/u))
    .filter((t) => t !== '');
}
