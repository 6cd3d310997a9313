import { z } from 'zod';

/**
 * Frames of the ssh broker protocol (WebSocket subprotocol `service-ssh.v1`): JSON text frames,
 * one object each, terminal bytes in base64.
 *
 * @see docs/cli.md "ssh: the broker protocol"
 */
export const SSH_SUBPROTOCOL = 'service-ssh.v1';
/** Largest frame either side sends or accepts. */
export const SSH_MAX_FRAME_BYTES = 1024 * 1024;

const base64 = z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be base64');
const dimension = z.number().int().min(1).max(10_000);

/** CLI to broker: keystrokes, the terminal's size, the end of input. */
export const sshClientFrameSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('data'), data: base64 }),
  z.object({ type: z.literal('resize'), cols: dimension, rows: dimension }),
  z.object({ type: z.literal('eof') }),
]);
export type SshClientFrame = z.infer<typeof sshClientFrameSchema>;

/** Broker to CLI: terminal output, the shell's exit code (last frame), or why it failed. */
export const sshServerFrameSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('data'), data: base64 }),
  z.object({ type: z.literal('exit'), code: z.number().int().min(0).max(255) }),
  z.object({ type: z.literal('error'), message: z.string(), code: z.string().optional() }),
]);
export type SshServerFrame = z.infer<typeof sshServerFrameSchema>;
