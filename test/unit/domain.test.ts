import { describe, expect, it } from 'vitest';
import { parseJobData, readableExecutionId } from '../../src/domain/job.js';
import { createSecretVault } from '../../src/domain/secrets.js';
import { parseSpecification } from '../../src/domain/specification.js';

describe('job data', () => {
  it('accepts the contract shape and keeps an explicit null input', () => {
    expect(parseJobData({ executionId: 'e1', workflowId: 'w', inputPayload: null, specification: { prompt: 'p' } })).toEqual({
      executionId: 'e1',
      workflowId: 'w',
      inputPayload: null,
      specification: { prompt: 'p' },
    });
    expect('inputPayload' in parseJobData({ executionId: 'e1' })).toBe(false);
  });

  it('rejects bad data with invalid_job, naming the field', () => {
    expect(() => parseJobData({ executionId: 42 })).toThrow(expect.objectContaining({ code: 'invalid_job', message: expect.stringContaining('executionId') }));
    expect(() => parseJobData('nope')).toThrow(expect.objectContaining({ code: 'invalid_job' }));
    expect(() => parseJobData({ executionId: 'e', specification: [1] })).toThrow(expect.objectContaining({ code: 'invalid_job' }));
  });

  it('reads the execution id of malformed data when it can', () => {
    expect(readableExecutionId({ executionId: 'e9', specification: 3 })).toBe('e9');
    expect(readableExecutionId({ executionId: '' })).toBeUndefined();
    expect(readableExecutionId(null)).toBeUndefined();
  });
});

describe('specification', () => {
  it('accepts snake_case spellings and normalises them', () => {
    expect(parseSpecification({ prompt: 'Do it', allowed_domains: ['a.test'], start_url: 'http://a.test/x', max_steps: 5, timeout_ms: 1000, payload_schema: { type: 'object' } })).toEqual({
      prompt: 'Do it',
      allowedDomains: ['a.test'],
      startUrl: 'http://a.test/x',
      maxSteps: 5,
      timeoutMs: 1000,
      payloadSchema: { type: 'object' },
    });
  });

  it('rejects a missing prompt, an empty allow-list and bad caps with invalid_specification', () => {
    for (const bad of [{ allowedDomains: ['a.test'] }, { prompt: 'x', allowedDomains: [] }, { prompt: 'x', allowedDomains: ['a.test'], maxSteps: -1 }, 'text', null]) {
      expect(() => parseSpecification(bad)).toThrow(expect.objectContaining({ code: 'invalid_specification' }));
    }
  });
});

describe('secret vault', () => {
  const schema = {
    type: 'object',
    properties: {
      user: { type: 'string' },
      password: { type: 'string', writeOnly: true },
      login: { type: 'object', properties: { pin: { type: 'string', 'x-secret': true } } },
      cards: { type: 'array', items: { type: 'object', properties: { cvv: { type: 'string', writeOnly: true } } } },
    },
  };
  const payload = { user: 'ann', password: 'pa55word!', login: { pin: '9876' }, cards: [{ cvv: '123' }] };

  it('masks secret fields with {{path}} placeholders and reveals them for typing', () => {
    const vault = createSecretVault(payload, schema);
    expect(vault.maskedPayload).toEqual({ user: 'ann', password: '{{password}}', login: { pin: '{{login.pin}}' }, cards: [{ cvv: '{{cards.0.cvv}}' }] });
    expect(vault.paths).toEqual(['password', 'login.pin', 'cards.0.cvv']);
    expect(vault.reveal('{{login.pin}} and {{ password }} and {{unknown}}')).toBe('9876 and pa55word! and {{unknown}}');
  });

  it('redacts secret values and extra secrets from any text or value', () => {
    const vault = createSecretVault(payload, schema, ['sk-ant-api-key-123']);
    expect(vault.redact('typed pa55word! with sk-ant-api-key-123')).toBe('typed {{password}} with [REDACTED]');
    expect(vault.redactValue({ a: ['pin 9876'] })).toEqual({ a: ['pin {{login.pin}}'] });
  });

  it('leaves everything as it is without a schema', () => {
    const vault = createSecretVault({ a: 1 }, undefined);
    expect(vault.maskedPayload).toEqual({ a: 1 });
    expect(vault.paths).toEqual([]);
  });
});
