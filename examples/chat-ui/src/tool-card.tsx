/**
 * One tool call as a card: the tool's name, its input, and where it stands (running, its output,
 * its error text, denied). A call parked for approval carries the approval buttons.
 */
import { type DynamicToolUIPart, getToolName, type ToolUIPart } from 'ai';
import { useState } from 'react';

/** The id of the conversation's message box: where the keyboard's focus goes when a control it used goes away. */
export const MESSAGE_BOX_ID = 'chat-input';

export type ToolPart = ToolUIPart | DynamicToolUIPart;

export interface ApprovalActions {
  approve(approvalId: string): Promise<void>;
  deny(approvalId: string): Promise<void>;
  alwaysAllow(approvalId: string): Promise<void>;
}

const STATE_LABELS: Record<ToolPart['state'], string> = {
  'input-streaming': 'Preparing',
  'input-available': 'Running',
  'approval-requested': 'Needs your approval',
  'approval-responded': 'Answered',
  'output-available': 'Done',
  'output-error': 'Failed',
  'output-denied': 'Denied',
};

export function ToolCard({ part, actions }: { part: ToolPart; actions: ApprovalActions }) {
  const name = getToolName(part);
  const label =
    part.state === 'approval-responded'
      ? part.approval.approved
        ? 'Approved'
        : 'Denied'
      : STATE_LABELS[part.state];
  return (
    <section className="tool-card" data-state={part.state} aria-label={`Tool call ${name}`}>
      <header className="tool-card-header">
        <span className="tool-name">{name}</span>
        <span className="tool-state">{label}</span>
      </header>
      {part.input !== undefined && <JsonBlock label="Input" value={part.input} />}
      {part.state === 'output-available' && <JsonBlock label="Output" value={part.output} />}
      {part.state === 'output-error' && <p className="tool-error">{part.errorText}</p>}
      {part.state === 'output-denied' && <p className="tool-denied">Not run: the call was denied.</p>}
      {part.state === 'approval-requested' && (
        <ApprovalButtons approvalId={part.approval.id} actions={actions} />
      )}
    </section>
  );
}

function ApprovalButtons({ approvalId, actions }: { approvalId: string; actions: ApprovalActions }) {
  // One answer per approval: the buttons go quiet once one is clicked.
  const [answering, setAnswering] = useState(false);
  const answer = (act: (id: string) => Promise<void>) => () => {
    setAnswering(true);
    // The buttons go once the decision lands: the keyboard's focus goes on to the message box
    // rather than falling to the page.
    document.getElementById(MESSAGE_BOX_ID)?.focus();
    act(approvalId).catch(() => setAnswering(false));
  };
  return (
    <fieldset className="approval">
      <legend>Allow this call?</legend>
      <button type="button" className="primary" disabled={answering} onClick={answer(actions.approve)}>
        Approve
      </button>
      <button type="button" disabled={answering} onClick={answer(actions.deny)}>
        Deny
      </button>
      <button type="button" disabled={answering} onClick={answer(actions.alwaysAllow)}>
        Always allow
      </button>
    </fieldset>
  );
}

function JsonBlock({ label, value }: { label: string; value: unknown }) {
  return (
    <div className="json-block">
      <span className="json-label">{label}</span>
      <pre>{JSON.stringify(value, null, 2) ?? String(value)}</pre>
    </div>
  );
}
