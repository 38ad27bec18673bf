import type { AgentFields, AgentRow, AgentsRepo } from '../../../store/agents.js';
import { type Db, json } from '../database.js';

export class PgAgentsRepo implements AgentsRepo {
  constructor(private readonly db: Db) {}

  insert(agent: AgentFields & { id: string; user_id: string }): Promise<AgentRow> {
    return this.db
      .insertInto('agents')
      .values({
        ...agent,
        basic_details: json(agent.basic_details),
        metric_config: json(agent.metric_config),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  get(agentId: string): Promise<AgentRow | undefined> {
    return this.db.selectFrom('agents').selectAll().where('id', '=', agentId).executeTakeFirst();
  }

  getForUser(userId: string, agentId: string): Promise<AgentRow | undefined> {
    return this.db
      .selectFrom('agents')
      .selectAll()
      .where('id', '=', agentId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
  }

  activeForUser(userId: string, agentId: string): Promise<Pick<AgentRow, 'id' | 'is_active'> | undefined> {
    return this.db
      .selectFrom('agents')
      .select(['id', 'is_active'])
      .where('id', '=', agentId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
  }

  listForUser(userId: string): Promise<AgentRow[]> {
    return this.db
      .selectFrom('agents')
      .selectAll()
      .where('user_id', '=', userId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .execute();
  }

  async ownerOf(agentId: string): Promise<string | undefined> {
    const row = await this.db
      .selectFrom('agents')
      .select('user_id')
      .where('id', '=', agentId)
      .executeTakeFirst();
    return row?.user_id;
  }

  update(agentId: string, fields: Partial<AgentFields>, now: Date): Promise<AgentRow | undefined> {
    const { basic_details, metric_config, ...rest } = fields;
    return this.db
      .updateTable('agents')
      .set({
        ...rest,
        ...(basic_details !== undefined ? { basic_details: json(basic_details) } : {}),
        ...(metric_config !== undefined ? { metric_config: json(metric_config) } : {}),
        updated_at: now,
      })
      .where('id', '=', agentId)
      .returningAll()
      .executeTakeFirst();
  }

  async idsUsingTrunk(trunkId: string): Promise<string[]> {
    const rows = await this.db
      .selectFrom('agents')
      .select('id')
      .where('sip_trunk_id', '=', trunkId)
      .execute();
    return rows.map((row) => row.id);
  }
}
