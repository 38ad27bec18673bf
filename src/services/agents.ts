import { validateAgentAi } from '../domain/agent-call.js';
import type { MetricConfig } from '../domain/analysis.js';
import { AppError } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import type { AgentRow } from '../store/agents.js';
import type { Deps } from './deps.js';

export interface BasicDetails {
  dialId?: string;
  voiceId?: string;
  agent_name?: string;
  voiceSpeed?: number;
  voiceGender?: string;
  agentLanguage?: string;
  [extra: string]: unknown;
}

/** The spec's Agent shape. */
export interface AgentView {
  id: string;
  userId: string;
  name: string;
  createdAt: string;
  updatedAt: string;
  type: 'OUTBOUND' | 'INBOUND';
  isActive: boolean;
  basicDetails: BasicDetails;
  metricConfig: MetricConfig;
  sipTrunkId: string | null;
}

export interface AgentInput {
  name?: string;
  type?: 'OUTBOUND' | 'INBOUND';
  isActive?: boolean;
  basicDetails?: BasicDetails;
  metricConfig?: MetricConfig;
  sipTrunkId?: string | null;
}

export class AgentService {
  constructor(private readonly deps: Pick<Deps, 'store' | 'clock'>) {}

  async create(userId: string, input: AgentInput & { name: string }): Promise<AgentView> {
    if (!(await this.deps.store.users.exists(userId))) throw new AppError('NOT_FOUND', 'User not found');
    validateAgentInput(input);
    await this.checkTrunk(userId, input.sipTrunkId);
    const row = await this.deps.store.agents.insert({
      id: newId('agt'),
      user_id: userId,
      name: input.name,
      type: input.type ?? 'OUTBOUND',
      is_active: input.isActive ?? true,
      basic_details: input.basicDetails ?? {},
      metric_config: { ...(input.metricConfig ?? { enabled: false, customMetrics: [] }) },
      sip_trunk_id: input.sipTrunkId ?? null,
    });
    return toAgentView(row);
  }

  /** An agent may only dial through a trunk of its own user. */
  private async checkTrunk(userId: string, trunkId: string | null | undefined): Promise<void> {
    if (!trunkId) return;
    if (!(await this.deps.store.sipTrunks.existsForUser(trunkId, userId))) {
      const message = "must name one of the user's SIP trunks (see /admin/v1/sip-trunks)";
      throw new AppError('INVALID_REQUEST', `sipTrunkId ${message}`, {
        fieldErrors: { sipTrunkId: [message] },
      });
    }
  }

  async update(agentId: string, input: AgentInput): Promise<AgentView> {
    validateAgentInput(input);
    if (input.sipTrunkId) {
      const owner = await this.deps.store.agents.ownerOf(agentId);
      if (owner === undefined) throw new AppError('NOT_FOUND', 'Agent not found');
      await this.checkTrunk(owner, input.sipTrunkId);
    }
    const row = await this.deps.store.agents.update(
      agentId,
      {
        ...(input.name !== undefined ? { name: input.name } : {}),
        ...(input.type !== undefined ? { type: input.type } : {}),
        ...(input.isActive !== undefined ? { is_active: input.isActive } : {}),
        ...(input.basicDetails !== undefined ? { basic_details: input.basicDetails } : {}),
        ...(input.metricConfig !== undefined ? { metric_config: { ...input.metricConfig } } : {}),
        ...(input.sipTrunkId !== undefined ? { sip_trunk_id: input.sipTrunkId } : {}),
      },
      this.deps.clock.now(),
    );
    if (!row) throw new AppError('NOT_FOUND', 'Agent not found');
    return toAgentView(row);
  }

  async list(userId: string): Promise<AgentView[]> {
    const rows = await this.deps.store.agents.listForUser(userId);
    return rows.map(toAgentView);
  }

  /** Any agent by id (the admin API's read). */
  async get(agentId: string): Promise<AgentView> {
    const row = await this.deps.store.agents.get(agentId);
    if (!row) throw new AppError('NOT_FOUND', 'Agent not found');
    return toAgentView(row);
  }

  /** The user's agent, active or not; another user's agent is as absent as a missing one. */
  async getForUser(userId: string, agentId: string): Promise<AgentView | null> {
    const row = await this.deps.store.agents.getForUser(userId, agentId);
    return row ? toAgentView(row) : null;
  }
}

/** The rules on an agent's input that its request schema cannot state; 400 with every field's errors. */
function validateAgentInput(input: AgentInput): void {
  const fieldErrors = {
    ...metricConfigErrors(input.metricConfig),
    ...(input.basicDetails ? validateAgentAi(input.basicDetails) : {}),
  };
  if (Object.keys(fieldErrors).length > 0) {
    throw new AppError('INVALID_REQUEST', `Invalid ${Object.keys(fieldErrors).join(', ')}`, { fieldErrors });
  }
}

function metricConfigErrors(config: MetricConfig | undefined): Record<string, string[]> {
  const fieldErrors: Record<string, string[]> = {};
  if (!config) return fieldErrors;
  const seen = new Set<string>();
  config.customMetrics.forEach((metric, index) => {
    const at = `metricConfig.customMetrics.${index}`;
    if (seen.has(metric.name)) fieldErrors[`${at}.name`] = [`duplicate metric name "${metric.name}"`];
    seen.add(metric.name);
    if (metric.type === 'enum' && (!metric.options || metric.options.length === 0)) {
      fieldErrors[`${at}.options`] = ['an enum metric needs at least one option'];
    }
  });
  return fieldErrors;
}

export function toAgentView(row: AgentRow): AgentView {
  const metric = row.metric_config as Partial<MetricConfig>;
  return {
    id: row.id,
    userId: row.user_id,
    name: row.name,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    type: row.type,
    isActive: row.is_active,
    basicDetails: row.basic_details as BasicDetails,
    metricConfig: { enabled: metric.enabled ?? false, customMetrics: metric.customMetrics ?? [] },
    sipTrunkId: row.sip_trunk_id,
  };
}
