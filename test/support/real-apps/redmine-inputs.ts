import type { IssueInput } from './redmine-agent.js';
import type { InputFiles } from './input-files.js';

/** The files the issues attach, served to the worker as input files. */
export const ATTACHMENTS = {
  'checkout-trace.txt': { body: 'POST /checkout 502\nupstream: payments-eu\nretry: 3 of 3\n', type: 'text/plain' },
  'invoice-run.log': { body: '2026-11-02 invoice run started\n2026-11-02 412 invoices sent\n', type: 'text/plain' },
};

export const attachmentBytes = (name: keyof typeof ATTACHMENTS) => Buffer.byteLength(ATTACHMENTS[name].body);

/** An issue with a value in every field kind Redmine has on its form. */
export function checkoutIssue(files: InputFiles, password: string): IssueInput {
  return {
    user: 'alice',
    password,
    tracker: 'Bug',
    subject: 'Checkout fails for EU cards',
    description: 'h2. What happens\n\nSince release *3.2*, paying with a card issued in the EU fails at the last step.\n\n# Add any item to the cart\n# Pay with an EU card\n\nExpected: the order is placed.',
    priority: 'High',
    assignee: 'Kwame Boateng',
    category: 'Billing',
    targetVersion: '1.1',
    startDate: '2026-11-30',
    dueDate: '2026-12-11',
    estimatedHours: 2.5,
    customerReference: 'ACME-4471',
    customerNotes: 'Reported by their finance team.\nThey pay by card only.',
    affectedUsers: 1200,
    budget: 1250.5,
    deadline: '2026-12-18',
    billable: true,
    severity: 'Critical',
    platforms: ['Linux', 'Windows'],
    region: 'EMEA',
    reviewer: 'Ama Owusu',
    fixedIn: '1.1',
    runbook: 'https://runbooks.example.test/payments-eu',
    watcher: 'Kofi Mensah',
    attachment: { $file: files.url('checkout-trace.txt') },
  };
}

/**
 * An issue that differs from `first` in every field of the issue (the account that files it
 * aside): another tracker, texts, choices, dates, numbers, platforms, region, people and file,
 * no two of its values alike. What a repeat must save exactly.
 */
export function everyFieldNew(first: IssueInput, files: InputFiles): IssueInput {
  const next: IssueInput = {
    user: first.user,
    password: first.password,
    tracker: first.tracker === 'Support' ? 'Feature' : 'Support',
    subject: 'Refund emails are sent twice',
    description: 'h2. Steps\n\nRefund an order from the back office.\n\nThe customer gets *two* emails.',
    priority: 'Urgent',
    assignee: 'Abena Asante',
    category: 'Frontend',
    targetVersion: '2.0',
    startDate: '2026-12-07',
    dueDate: '2026-12-21',
    estimatedHours: 4,
    customerReference: 'GLOBEX-118',
    customerNotes: 'Seen by two customers.\nBoth on mobile.',
    affectedUsers: 35,
    budget: 480.75,
    deadline: '2027-01-08',
    billable: !first.billable,
    severity: 'Minor',
    platforms: ['macOS', 'Linux'],
    region: 'APAC',
    reviewer: 'Yaw Adjei',
    fixedIn: '1.0',
    runbook: 'https://runbooks.example.test/refunds',
    watcher: 'Efua Frimpong',
    attachment: { $file: files.url('invoice-run.log') },
  };
  return next;
}
