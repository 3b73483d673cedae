// The chat runtime's loop, typed by the types openapi-typescript generates from the API's
// schema (SPEC §10): a user, a character, a conversation, a turn planned in the same
// request, the reply, the conversation's last 20 messages read back (C4), a correction, a
// forget, a boundary decision, the answer to its ASK and the export. Generate the types first (see the README):
//
//   npx openapi-typescript http://127.0.0.1:8000/api/schema/?format=json -o generated/schema.d.ts
//
// then `npx tsc --noEmit --strict -p .` checks every request and answer below against them.
import type { components, operations } from "./generated/schema";

type Schemas = components["schemas"];
export type Problem = Schemas["Problem"];

type Body<O extends keyof operations> = operations[O] extends {
  requestBody?: { content: { "application/json": infer B } };
}
  ? B
  : never;

type Answer<O extends keyof operations, S extends number> = operations[O] extends {
  responses: { [K in S]: { content: { "application/json": infer A } } };
}
  ? A
  : never;

export class ApiProblem extends Error {
  constructor(
    readonly status: number,
    readonly problem: Problem,
  ) {
    super(`${status} ${problem.code}`);
  }
}

export class Api {
  constructor(
    private readonly baseUrl: string,
    private readonly token: string,
  ) {}

  async call<T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
    const init: RequestInit = {
      method,
      headers: {
        Authorization: `Bearer ${this.token}`,
        Accept: "application/json",
        "Content-Type": "application/json",
      },
    };
    if (body !== undefined) init.body = JSON.stringify(body);
    const response = await fetch(`${this.baseUrl}/api/v1${path}`, init);
    const parsed: unknown = response.status === 204 ? undefined : await response.json();
    if (response.status >= 400) throw new ApiProblem(response.status, parsed as Problem);
    return { status: response.status, body: parsed as T };
  }
}

export interface LoopResult {
  lastMessages: Array<Pick<Schemas["MessageOutput"], "role" | "content" | "withheld">>;
  forgottenScope: Schemas["TombstoneScopeKindEnum"];
  // A memory's value is null while a forget withholds it (F7.2).
  remembered: Schemas["MemoryOutput"]["value"];
  corrected: Schemas["MemoryOutput"]["value"];
  effect: Schemas["EffectEnum"];
  answered: Schemas["EffectEnum"];
  format: string;
}

export async function loop(api: Api, user: string, slug: string): Promise<LoopResult> {
  const userBody: Body<"user_put"> = {};
  await api.call<Answer<"user_put", 201>>("PUT", `/users/${encodeURIComponent(user)}`, userBody);

  const characterBody: Body<"character_put"> = { name: "Captain Rowan" };
  const character = await api.call<Answer<"character_put", 201>>("PUT", `/characters/${slug}`, characterBody);

  const conversationBody: Body<"conversation_create"> = { user, character: character.body.slug };
  const conversation = await api.call<Answer<"conversation_create", 201>>(
    "POST", "/conversations", conversationBody);

  const turnBody: Body<"turn_create"> = {
    turn_key: "turn-1",
    content: "My cat's name is Miso.",
    plan: { budget: 800, capabilities: ["tone.playful"] },
  };
  const turn = await api.call<Answer<"turn_create", 201>>(
    "POST", `/conversations/${conversation.body.id}/turns`, turnBody);
  const memory = turn.body.extracted[0]?.memory;
  if (!memory) throw new Error("nothing was remembered");

  const replyBody: Body<"turn_reply"> = { content: "Miso is a lovely name." };
  await api.call<Answer<"turn_reply", 201>>("POST", `/turns/${turn.body.id}/reply`, replyBody);

  // Read the conversation's last 20 messages back (C4): messages are numbered 1, 2, 3…, so
  // the last 20 are those after last_seq - 20.
  const read = await api.call<Answer<"conversation_get", 200>>("GET", `/conversations/${conversation.body.id}`);
  const afterSeq = Math.max(0, read.body.last_seq - 20);
  const page = await api.call<Answer<"conversation_messages", 200>>(
    "GET", `/conversations/${conversation.body.id}/messages?after_seq=${afterSeq}&limit=20`);
  const lastMessages = page.body.results.map(({ role, content, withheld }) => ({ role, content, withheld }));

  const correctBody: Body<"memory_correct"> = { value: "Mochi" };
  const corrected = await api.call<Answer<"memory_correct", 201>>(
    "POST", `/memories/${memory.id}/correct`, correctBody);
  const correctedMemory: Schemas["MemoryOutput"] | null = corrected.body.memory;
  if (!correctedMemory) throw new Error("the correction stored nothing");

  const forgetBody: Body<"memory_forget"> = { everywhere: false, whole_key: false };
  const tombstone = await api.call<Answer<"memory_forget", 200>>(
    "POST", `/memories/${correctedMemory.id}/forget`, forgetBody);

  // A scope or context is one of its kinds: a conversation's names the conversation.
  const context: Schemas["ContextInputRequest"] = { user, conversation: conversation.body.id };
  const decideBody: Body<"policy_decide"> = { context, capability: "media.voice", requested_by: "user" };
  const decision = await api.call<Answer<"policy_decide", 200>>("POST", "/policy/decide", decideBody);

  const answerBody: Body<"policy_answers_create"> = {
    decision_id: decision.body.decision_id,
    answer: "allow",
    remember: "once",
  };
  const answered = await api.call<Answer<"policy_answers_create", 200>>("POST", "/policy/answers", answerBody);

  const exported = await api.call<Answer<"user_export", 200>>("GET", `/users/${encodeURIComponent(user)}/export`);

  return {
    lastMessages,
    forgottenScope: tombstone.body.scope.kind,
    remembered: memory.value,
    corrected: correctedMemory.value,
    effect: decision.body.effect,
    answered: answered.body.effect,
    format: exported.body.format,
  };
}
