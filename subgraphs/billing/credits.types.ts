import { Field, ID, InputType, Int, ObjectType } from 'type-graphql';
import { Rest } from '../rest';
import { PageType } from '../page';
import { creditEntryKinds, GRANT_REASON_MAX, MAX_CREDITS_PER_WRITE } from '../../src/domains/billing';
import { PlanType } from './plan.types';
import { MONEY_PATTERN } from '../../src/money';

/** A decimal amount of money as the API writes it (the kernel's, which its parser checks too). */
export { MONEY_PATTERN };

@ObjectType('CreditBalance', {
  description:
    "A company's credits: what it may spend (monthly credits first, then granted, then purchased) and what running operations hold",
})
export class CreditBalanceType {
  @Rest({ minimum: 0 })
  @Field(() => Int, { description: 'monthly + granted + purchased: what the next operation may reserve' })
  available!: number;

  @Rest({ minimum: 0 })
  @Field(() => Int, { description: "This period's plan credits not yet spent or held; they expire when the period ends" })
  monthly!: number;

  @Rest({ minimum: 0 })
  @Field(() => Int, { description: 'Credits bought with top-ups; they never expire' })
  purchased!: number;

  @Rest({ minimum: 0 })
  @Field(() => Int, { description: 'Credits a platform superadmin granted; they never expire' })
  granted!: number;

  @Rest({ minimum: 0 })
  @Field(() => Int, { description: 'Credits reserved by operations still running' })
  held!: number;

  @Field(() => Date, { nullable: true, description: 'Start of the current allocation period' })
  periodStart!: Date | null;

  @Field(() => Date, { nullable: true, description: 'End of the current allocation period: the next monthly credits arrive then' })
  periodEnd!: Date | null;

  @Field(() => PlanType, { description: "The company's plan" })
  plan!: PlanType;
}

@ObjectType('SpendingBudget', { description: "A company's spending budget per period, in the billing currency, and the period's spend so far" })
export class SpendingBudgetType {
  @Rest({ pattern: MONEY_PATTERN })
  @Field(() => String, { nullable: true, description: 'Decimal amount; null: no budget. Once the spend reaches it, operations answer 402 budget_exhausted.' })
  budget!: string | null;

  @Rest({ pattern: MONEY_PATTERN })
  @Field(() => String, { description: 'Currency cost of the usage committed in the current period (decimal)' })
  spend!: string;

  @Rest({ pattern: '^[a-z]{3}$' })
  @Field(() => String, { description: 'ISO 4217 code, lowercase' })
  currency!: string;

  @Field(() => Date, { nullable: true, description: 'When the spend starts again (the period end)' })
  periodEnd!: Date | null;
}

@ObjectType('CreditTransaction', { description: 'One ledger entry: how it moved each bucket of the balance' })
export class CreditTransactionType {
  @Field(() => ID)
  id!: string;

  @Rest({ enum: creditEntryKinds })
  @Field(() => String, { description: creditEntryKinds.join(', ') })
  kind!: string;

  @Rest({ minimum: 0 })
  @Field(() => Int, { description: 'The credits the entry is about (allocated, spent, held, granted, ...)' })
  credits!: number;

  @Field(() => Int, { description: 'Change of the monthly credits' })
  monthly!: number;

  @Field(() => Int, { description: 'Change of the granted credits' })
  granted!: number;

  @Field(() => Int, { description: 'Change of the purchased credits' })
  purchased!: number;

  @Field(() => Int, { description: 'Change of the held credits' })
  held!: number;

  @Rest({ format: 'uuid' })
  @Field(() => ID, { nullable: true, description: 'The hold of a hold, commit or release' })
  holdId!: string | null;

  @Field(() => String, { nullable: true, description: 'The allocation period (YYYY-MM, or the subscription period)' })
  periodKey!: string | null;

  @Field(() => String, { nullable: true, description: 'Why (grants and revokes)' })
  reason!: string | null;

  @Rest({ format: 'uuid' })
  @Field(() => ID, { nullable: true, description: 'The user behind it (a superadmin for grants, the spender for holds)' })
  actorId!: string | null;

  @Field()
  createdAt!: Date;
}

export const CreditTransactionPageType = PageType(CreditTransactionType, 'CreditTransactionPage');

@InputType('CreditGrantInput', { description: 'CreditGrantRequest: how many credits and why' })
export class CreditGrantInput {
  @Rest({ minimum: 1, maximum: MAX_CREDITS_PER_WRITE })
  @Field(() => Int, { description: `1 to ${MAX_CREDITS_PER_WRITE}` })
  credits!: number;

  @Rest({ minLength: 1, maxLength: GRANT_REASON_MAX })
  @Field(() => String, { description: `Why, 1 to ${GRANT_REASON_MAX} characters (kept in the ledger and the audit log)` })
  reason!: string;
}

@InputType('SpendingBudgetInput', { description: 'A spending budget per period' })
export class SpendingBudgetInput {
  @Rest({ required: true, pattern: MONEY_PATTERN })
  @Field(() => String, { nullable: true, description: 'Decimal amount in the billing currency (e.g. "250.00"); null removes the budget. Required: left out, the request is refused' })
  budget!: string | null | undefined;
}
