// Shared by the checks that read TypeScript syntax (function length, catch reasons): parse a
// file with the compiler API, find line numbers, and find the lines comments sit on.
import { readFileSync } from 'node:fs';
import ts from 'typescript';

export { ts };

/** A parsed source file (no type checking; parent pointers set). */
export function parseSource(file) {
  const kind = /\.m?js$/.test(file) ? ts.ScriptKind.JS : ts.ScriptKind.TS;
  return ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true, kind);
}

/** 1-based line of a position. */
export function lineOf(sf, pos) {
  return sf.getLineAndCharacterOfPosition(pos).line + 1;
}

/** The 1-based lines any comment of the file touches. */
export function commentLines(sf) {
  const text = sf.getFullText();
  const lines = new Set();
  const mark = (ranges) => {
    for (const r of ranges ?? []) {
      for (let l = lineOf(sf, r.pos); l <= lineOf(sf, r.end); l++) lines.add(l);
    }
  };
  // Every comment is leading trivia of some token or trailing trivia of the one before it.
  const visit = (node) => {
    // JSDoc nodes sit inside a comment the next token's leading trivia already covers.
    if (node.kind >= ts.SyntaxKind.FirstJSDocNode && node.kind <= ts.SyntaxKind.LastJSDocNode) {
      return;
    }
    const children = node.getChildren(sf);
    if (children.length === 0) {
      mark(ts.getLeadingCommentRanges(text, node.pos));
      mark(ts.getTrailingCommentRanges(text, node.end));
      return;
    }
    for (const child of children) visit(child);
  };
  visit(sf);
  mark(ts.getLeadingCommentRanges(text, sf.endOfFileToken.pos));
  return lines;
}
