import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { answerField, answerOutcome, grantsApproval, parseAnswer } from '../../src/domain/human-protocol.js';
import type { HumanDecision } from '../../src/contract/human.js';

/**
 * The approval rule (docs/human-in-the-loop.md#approvals), by generated cases: only the approve
 * decision, or a text that is exactly `approve` (case and surrounding white space aside), grants;
 * nothing that merely starts or ends like an approval does. The oracle below is written a
 * character at a time, apart from the rule's own code.
 */

const WORD = 'approve';
const isSpace = (c: string) => /\s/u.test(c);

/** The oracle: the text between its first and last non-space character is `approve`, letter by letter in either case. */
function exactlyApprove(text: string): boolean {
  const chars = [...text];
  let start = 0;
  let end = chars.length;
  while (start < end && isSpace(chars[start]!)) start++;
  while (end > start && isSpace(chars[end - 1]!)) end--;
  const middle = chars.slice(start, end);
  return middle.length === WORD.length && middle.every((c, i) => c === WORD[i] || c === WORD[i]!.toUpperCase());
}

const space = fc.string({ unit: fc.constantFrom(' ', '\t', '\n', '\r', '\u00a0', '\u2003', '\u3000', '\ufeff', '\u2028'), maxLength: 4 });
const approveAnyCase = fc.mixedCase(fc.constant(WORD));
/** Words people write when they mean yes, or seem to. */
const approvingWord = fc.constantFrom('approve', 'approved', 'Approve', 'APPROVE', 'yes', 'y', 'ok', 'OK', 'okay', 'allow', 'accept', 'confirm', 'go ahead', 'proceed', 'sure', 'fine', '👍', 'approve.', 'appr0ve', 'аpprove' /* Cyrillic а */, 'approvе' /* Cyrillic е */, 'ａｐｐｒｏｖｅ' /* full width */);
/** Anything after the word that is not white space alone. */
const tail = fc.string({ minLength: 1 }).filter((t) => [...t].some((c) => !isSpace(c)));

const text = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme' }),
  fc.string({ unit: 'binary' }),
  fc.tuple(space, approveAnyCase, space).map((parts) => parts.join('')),
  fc.tuple(space, approvingWord, fc.oneof(tail, space)).map((parts) => parts.join('')),
  fc.tuple(fc.string({ maxLength: 3 }), approveAnyCase, fc.string({ maxLength: 3 })).map((parts) => parts.join('')),
  fc.constantFrom('OK, no - do not pay', 'approve? no', 'Approve - NOT', 'approve\u0000', 'approve\u200b', '\u200bapprove'),
);
const decision = fc.constantFrom<HumanDecision | null>('approve', 'deny', null);

describe('the approval rule', () => {
  it('grants a text answer exactly when it is the word approve, whatever the text', () => {
    fc.assert(
      fc.property(text, (answer) => {
        expect(grantsApproval({ answer, decision: null })).toBe(exactlyApprove(answer));
      }),
      { numRuns: 5_000 },
    );
  });

  it('never grants a text that goes on after an approving word, whatever follows', () => {
    fc.assert(
      fc.property(space, fc.oneof(approveAnyCase, approvingWord), tail, (before, word, after) => {
        expect(grantsApproval({ answer: `${before}${word}${after}`, decision: null })).toBe(false);
      }),
      { numRuns: 2_000 },
    );
  });

  it('grants the word approve in any case with any white space around it', () => {
    fc.assert(
      fc.property(space, approveAnyCase, space, (before, word, after) => {
        expect(grantsApproval({ answer: `${before}${word}${after}`, decision: null })).toBe(true);
      }),
    );
  });

  it('follows a decision over the text beside it', () => {
    fc.assert(
      fc.property(text, (answer) => {
        expect(grantsApproval({ answer, decision: 'approve' })).toBe(true);
        expect(grantsApproval({ answer, decision: 'deny' })).toBe(false);
        expect(answerOutcome('approval', { answer, decision: 'deny' })).toBe('denied');
      }),
    );
  });

  it('reads an answer from the stream as it was written: the wire keeps the decision and the text', () => {
    fc.assert(
      fc.property(text, decision, fc.option(fc.string({ minLength: 1 }), { nil: null }), (answer, chosen, by) => {
        const read = parseAnswer(answerField({ answer, decision: chosen, by }));
        expect(read).toEqual({ answer, decision: chosen, by });
        expect(grantsApproval(read!)).toBe(chosen === null ? exactlyApprove(answer) : chosen === 'approve');
      }),
    );
  });

  it('grants from an entry someone else wrote only by the exact decision or the exact word', () => {
    const entry = fc.oneof(
      fc.jsonValue(),
      fc.record({ answer: fc.oneof(text, fc.jsonValue()), decision: fc.oneof(fc.constantFrom('approve', 'deny', 'Approve', 'APPROVE', ' approve', 'yes', true, 1, null), fc.jsonValue()) }, { requiredKeys: [] }),
    );
    fc.assert(
      fc.property(entry, (value) => {
        const read = parseAnswer(JSON.stringify(value));
        if (!read || !grantsApproval(read)) return;
        const { answer, decision: chosen } = value as { answer?: unknown; decision?: unknown };
        const byText = (chosen === undefined || chosen === null) && typeof answer === 'string' && exactlyApprove(answer);
        expect(chosen === 'approve' || byText).toBe(true);
      }),
      { numRuns: 3_000 },
    );
  });
});
