export interface AgentRow {
  id: string;
  user_id: string;
  name: string;
  type: 'OUTBOUND' | 'INBOUND';
  is_active: boolean;
  basic_details: Record<string, unknown>;
  metric_config: Record<string, unknown>;
  sip_trunk_id: string | null;
  created_at: Date;
  updated_at: Date;
}

/** The fields an agent is created with or changed by; JSON columns are given as values. */
export type AgentFields = Omit<AgentRow, 'id' | 'user_id' | 'created_at' | 'updated_at'>;

export interface AgentsRepo {
  insert(agent: AgentFields & { id: string; user_id: string }): Promise<AgentRow>;
  get(agentId: string): Promise<AgentRow | undefined>;
  getForUser(userId: string, agentId: string): Promise<AgentRow | undefined>;
  /** The user's agent's id and whether it is active. */
  activeForUser(userId: string, agentId: string): Promise<Pick<AgentRow, 'id' | 'is_active'> | undefined>;
  /** A user's agents, newest first. */
  listForUser(userId: string): Promise<AgentRow[]>;
  ownerOf(agentId: string): Promise<string | undefined>;
  /** Sets the fields given and updated_at; undefined when there is no such agent. */
  update(agentId: string, fields: Partial<AgentFields>, now: Date): Promise<AgentRow | undefined>;
  /** The agents that dial through a trunk. */
  idsUsingTrunk(trunkId: string): Promise<string[]>;
}
