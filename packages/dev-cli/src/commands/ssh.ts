import {
  SSH_MAX_FRAME_BYTES,
  SSH_SUBPROTOCOL,
  type SshClientFrame,
  sshServerFrameSchema,
} from '@service/core/schemas';
import WebSocket from 'ws';
import { z } from 'zod';
import { bodyOf, callPlatform, messageOf, notThePlatform } from '../api.js';
import { parseCommandArgs } from '../args.js';
import { CliError, systemReason, USAGE } from '../cli-error.js';
import { requireConfig } from '../config.js';
import { type CliIo, printable } from '../io.js';

const sessionSchema = z.object({
  broker_url: z.string().regex(/^wss?:\/\//),
  token: z.string().min(1),
});
type SessionAnswer = z.infer<typeof sessionSchema>;
/** The platform's own error answers carry a message and a code; other servers' do not. */
const platformErrorSchema = z.object({ message: z.string(), code: z.string() });
/** The platform's rule for `deployment` (an app slug or id), checked here to name the problem. */
const MAX_DEPLOYMENT_LENGTH = 200;

/**
 * `service ssh <deployment>`: asks the platform for a one-time session token, then runs an
 * interactive shell through the broker over WebSocket (subprotocol `service-ssh.v1`): the token
 * in the upgrade's `Authorization` header (never in the URL), the terminal raw, its size sent on
 * connect and on every resize, and the remote exit code returned as this command's.
 *
 * @see docs/cli.md "ssh"
 */
export async function run(args: string[], io: CliIo): Promise<number> {
  const { positionals } = parseCommandArgs(args, {}, 1);
  const deployment = positionals[0];
  if (deployment === undefined) throw new CliError('Missing argument: service ssh <deployment>', USAGE);
  // An empty word was given (`service ssh ''`, an unset variable): saying it is missing would
  // send the developer looking for an argument they did type.
  if (deployment === '') throw new CliError('The deployment name is empty: service ssh <deployment>', USAGE);
  // The platform refuses these with a message about the request's JSON, which would mislead.
  if (!deployment.trim()) throw new CliError('The deployment name is blank.', USAGE);
  if (deployment.length > MAX_DEPLOYMENT_LENGTH) {
    throw new CliError(`The deployment name is over ${MAX_DEPLOYMENT_LENGTH} characters.`, USAGE);
  }
  // An interactive shell has no result to print as JSON; saying so beats ignoring the flag.
  if (io.json) throw new CliError('service ssh is interactive: --json does not apply', USAGE);
  const config = await requireConfig(io);
  const path = '/api/cli/ssh-sessions';
  const answer = await callPlatform(config, 'POST', path, { deployment });
  if (answer.status < 200 || answer.status > 299) {
    // Only the platform's own refusal means "no such deployment": any other server at apiBase
    // answers 404 too, and an error without the platform's shape is not the platform's.
    const refusal = platformErrorSchema.safeParse(answer.body);
    if (!refusal.success) throw notThePlatform(config, path);
    if (refusal.data.code === 'DEPLOYMENT_NOT_FOUND') {
      throw new CliError(`No deployment "${printable(deployment)}" in your tenant.`);
    }
    throw new CliError(`Could not start a session: ${messageOf(answer)}`);
  }
  return shell(bodyOf(answer, sessionSchema, config, path), io);
}

function shell(session: SessionAnswer, io: CliIo): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const socket = new WebSocket(session.broker_url, SSH_SUBPROTOCOL, {
      headers: { authorization: `Bearer ${session.token}` },
      maxPayload: SSH_MAX_FRAME_BYTES,
      handshakeTimeout: 15_000,
    });
    const { stdin, stdout, stderr } = io;
    const raw = stdin.isTTY === true && typeof stdin.setRawMode === 'function';
    let exitCode: number | null = null;
    let failure: string | null = null;
    /** Whether the broker took the connection: before that, the terminal was never touched. */
    let opened = false;

    const send = (frame: SshClientFrame) => {
      if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(frame));
    };
    const size = () => ({ cols: stdout.columns ?? 80, rows: stdout.rows ?? 24 });
    const onInput = (chunk: Buffer | string) =>
      send({ type: 'data', data: Buffer.from(chunk).toString('base64') });
    const onEnd = () => send({ type: 'eof' });
    const onResize = () => send({ type: 'resize', ...size() });
    const restore = () => {
      stdin.off('data', onInput);
      stdin.off('end', onEnd);
      stdout.off?.('resize', onResize);
      if (raw) stdin.setRawMode!(false);
      stdin.pause();
    };

    socket.on('unexpected-response', (request, response) => {
      const status = response.statusCode ?? 0;
      response.resume();
      request.destroy();
      reject(
        new CliError(
          status === 401
            ? 'The ssh broker refused the session (its token was invalid or expired). Try again.'
            : `The ssh broker refused the connection (HTTP ${status}).`,
        ),
      );
    });
    socket.on('open', () => {
      opened = true;
      send({ type: 'resize', ...size() });
      if (raw) stdin.setRawMode!(true);
      stdin.on('data', onInput);
      stdin.on('end', onEnd);
      stdout.on?.('resize', onResize);
      stdin.resume();
    });
    socket.on('message', (message, isBinary) => {
      if (isBinary) return;
      let parsed: unknown;
      try {
        parsed = JSON.parse(message.toString());
      } catch {
        return;
      }
      const frame = sshServerFrameSchema.safeParse(parsed);
      if (!frame.success) {
        // A frame of a kind this CLI does not know is skipped; an exit it cannot read still ends
        // the session (the shell is gone), as a failure, rather than leaving the terminal held.
        if ((parsed as { type?: unknown } | null)?.type === 'exit') {
          failure = 'the broker sent an exit frame without a valid exit code';
          socket.close(1000);
        }
        return;
      }
      if (frame.data.type === 'data') stdout.write(Buffer.from(frame.data.data, 'base64'));
      else if (frame.data.type === 'exit') {
        exitCode = frame.data.code;
        // The shell is gone: do not wait for the broker to close the socket.
        socket.close(1000);
      } else failure = frame.data.message;
    });
    socket.on('error', (error) => {
      failure ??= opened ? error.message : systemReason(error);
    });
    socket.on('close', () => {
      // Never connected (nothing listening, a name that does not resolve): said as such.
      if (!opened) {
        return reject(
          new CliError(
            `Could not reach the ssh broker at ${printable(session.broker_url)} (${failure ?? 'closed'}).`,
          ),
        );
      }
      restore();
      if (exitCode !== null) return resolve(exitCode);
      // Start the message on a fresh line after whatever the remote shell printed.
      if (failure) stderr.write('\r\n');
      reject(
        new CliError(
          failure ? `ssh: ${failure}` : 'The connection to the broker closed before the shell exited.',
        ),
      );
    });
  });
}
