import { attachmentName, type IssueFields, type IssueInput } from './redmine-agent.js';
import type { Redmine } from './redmine.js';

/**
 * An issue as Redmine keeps it, read through its REST API as the admin, in the shape of the
 * agent's input: what a test compares with the input the run was given.
 */
export interface IssueRecord extends IssueFields {
  id: number;
  estimatedHours: number | null;
  affectedUsers: number | null;
  budget: number | null;
  watchers: string[];
  attachments: Array<{ name: string; bytes: number }>;
}

interface RestIssue {
  id: number;
  tracker: { name: string };
  subject: string;
  description: string | null;
  priority: { name: string };
  assigned_to?: { name: string };
  category?: { name: string };
  fixed_version?: { name: string };
  start_date: string | null;
  due_date: string | null;
  estimated_hours: number | null;
  custom_fields?: Array<{ name: string; value: string | string[] | null }>;
  watchers?: Array<{ name: string }>;
  attachments?: Array<{ filename: string; filesize: number; content_url: string }>;
}

export async function issueRecord(redmine: Redmine, id: number | string): Promise<IssueRecord> {
  const { issue } = await redmine.get<{ issue: RestIssue }>(`/issues/${id}.json?include=attachments,watchers`);
  const { versions } = await redmine.get<{ versions: Array<{ id: number; name: string }> }>(`/projects/${redmine.facts.project.identifier}/versions.json`);
  const userNames = new Map(Object.values(redmine.facts.users).map((u) => [String(u.id), u.name]));
  const versionNames = new Map(versions.map((v) => [String(v.id), v.name]));
  const custom = new Map((issue.custom_fields ?? []).map((f) => [f.name, f.value]));
  const one = (name: string) => {
    const value = custom.get(name);
    return typeof value === 'string' ? value : '';
  };
  const numberOf = (text: string) => (text === '' ? null : Number(text));
  const platforms = custom.get('Platforms');
  return {
    id: issue.id,
    tracker: issue.tracker.name,
    subject: issue.subject,
    // Redmine keeps a text's line breaks as CRLF, whatever the browser sent.
    description: (issue.description ?? '').replace(/\r\n/g, '\n'),
    priority: issue.priority.name,
    assignee: issue.assigned_to?.name ?? '',
    category: issue.category?.name ?? '',
    targetVersion: issue.fixed_version?.name ?? '',
    startDate: issue.start_date ?? '',
    dueDate: issue.due_date ?? '',
    estimatedHours: issue.estimated_hours,
    customerReference: one('Customer reference'),
    customerNotes: one('Customer notes').replace(/\r\n/g, '\n'),
    affectedUsers: numberOf(one('Affected users')),
    budget: numberOf(one('Budget')),
    deadline: one('Deadline'),
    billable: one('Billable') === '1',
    severity: one('Severity'),
    platforms: (Array.isArray(platforms) ? platforms.filter(Boolean) : []).sort(),
    region: one('Region'),
    reviewer: userNames.get(one('Reviewer')) ?? one('Reviewer'),
    fixedIn: versionNames.get(one('Fixed in')) ?? one('Fixed in'),
    runbook: one('Runbook'),
    watchers: (issue.watchers ?? []).map((w) => w.name).sort(),
    attachments: (issue.attachments ?? []).map((a) => ({ name: a.filename, bytes: a.filesize })),
  };
}

/** The record an input asks for (`bytes`: the attachment's size). */
export function recordFor(input: IssueInput, bytes: number): Omit<IssueRecord, 'id'> {
  return {
    tracker: input.tracker,
    subject: input.subject,
    description: input.description,
    priority: input.priority,
    assignee: input.assignee,
    category: input.category,
    targetVersion: input.targetVersion,
    startDate: input.startDate,
    dueDate: input.dueDate,
    estimatedHours: input.estimatedHours,
    customerReference: input.customerReference,
    customerNotes: input.customerNotes,
    affectedUsers: input.affectedUsers,
    budget: input.budget,
    deadline: input.deadline,
    billable: input.billable,
    severity: input.severity,
    platforms: [...input.platforms].sort(),
    region: input.region,
    reviewer: input.reviewer,
    fixedIn: input.fixedIn,
    runbook: input.runbook,
    watchers: [input.watcher],
    attachments: [{ name: attachmentName(input), bytes }],
  };
}

/** Every issue of the project, newest first: a run must leave no other record behind. */
export async function issueIds(redmine: Redmine): Promise<number[]> {
  const { issues } = await redmine.get<{ issues: Array<{ id: number }> }>(`/issues.json?project_id=${redmine.facts.project.identifier}&status_id=*&sort=id:desc&limit=100`);
  return issues.map((i) => i.id);
}
