import { Field, ID, InputType, Int, ObjectType } from 'type-graphql';
import { Rest } from '../rest';
import { PageType } from '../page';
import { MAX_SEATS, subscriptionStatuses } from '../../src/domains/payments';
import type { CreditBalance } from '../../src/domains/billing';
import { CreditBalanceType, MONEY_PATTERN } from './credits.types';
import { PlanType } from './plan.types';

const SEATS = `The subscription's quantity as the processor reports it, 0 to ${MAX_SEATS} (1 without a subscription)`;


@ObjectType('BillingSubscription', { description: "A company's paid subscription as the payment processor last reported it" })
export class BillingSubscriptionType {
  @Field(() => PlanType)
  plan!: PlanType;

  @Rest({ enum: subscriptionStatuses })
  @Field(() => String, { description: subscriptionStatuses.join(', ') })
  status!: string;

  @Rest({ minimum: 0, maximum: MAX_SEATS })
  @Field(() => Int, { description: SEATS })
  seats!: number;

  @Field(() => Boolean, { description: 'The subscription ends when the period does' })
  cancelAtPeriodEnd!: boolean;

  @Field(() => Date, { nullable: true })
  periodStart!: Date | null;

  @Field(() => Date, { nullable: true })
  periodEnd!: Date | null;

  @Field(() => Date, { nullable: true })
  trialEnd!: Date | null;
}

@ObjectType('BillingSummary', { description: "A company's plan, subscription, period, credits, budget and spend" })
export class BillingSummaryType {
  @Field(() => PlanType)
  plan!: PlanType;

  @Rest({ enum: subscriptionStatuses })
  @Field(() => String, { nullable: true, description: 'The subscription status; null without a paid subscription (on-premise, or no subscription yet)' })
  status!: string | null;

  @Field(() => Date, { nullable: true })
  periodStart!: Date | null;

  @Field(() => Date, { nullable: true, description: 'When the next monthly credits arrive' })
  periodEnd!: Date | null;

  @Field(() => Boolean)
  cancelAtPeriodEnd!: boolean;

  @Rest({ minimum: 0, maximum: MAX_SEATS })
  @Field(() => Int, { description: SEATS })
  seats!: number;

  @Field(() => Date, { nullable: true })
  trialEnd!: Date | null;

  @Field(() => CreditBalanceType)
  credits!: CreditBalance;

  @Rest({ pattern: MONEY_PATTERN })
  @Field(() => String, { nullable: true, description: 'Spending budget per period, decimal; null: none' })
  budget!: string | null;

  @Rest({ pattern: MONEY_PATTERN })
  @Field(() => String, { description: "This period's spend, decimal" })
  spend!: string;

  @Rest({ pattern: '^[a-z]{3}$' })
  @Field(() => String)
  currency!: string;

  @Rest({ enum: ['stripe', 'none'] })
  @Field(() => String, { description: 'stripe, or none in on-premise mode' })
  processor!: string;
}

@ObjectType('PlanChange', { description: 'What a plan change did' })
export class PlanChangeType {
  @Field(() => PlanType)
  plan!: PlanType;

  @Field(() => ID)
  previousPlanId!: string;

  @Rest({ enum: ['now', 'next_period', 'checkout'] })
  @Field(() => String, { description: 'now (an upgrade), next_period (a downgrade: credits from the next period) or checkout (pay at checkoutUrl first)' })
  effective!: string;

  @Rest({ minimum: 0 })
  @Field(() => Int, { description: "Monthly credits added for the rest of this period (an upgrade's difference)" })
  creditsAdded!: number;

  @Rest({ format: 'uri' })
  @Field(() => String, { nullable: true, description: 'The processor-hosted checkout of a new subscription' })
  checkoutUrl!: string | null;
}

@InputType('PlanChangeInput', { description: 'PlanChangeRequest' })
export class PlanChangeInput {
  @Rest({ minLength: 1, maxLength: 64 })
  @Field(() => String, { description: 'The plan to move to (GET /plans)' })
  planId!: string;
}

@ObjectType('TopupCheckout', { description: 'A processor-hosted checkout that sells credits; they arrive once it is paid' })
export class TopupCheckoutType {
  @Field(() => ID)
  sessionId!: string;

  @Rest({ format: 'uri' })
  @Field(() => String, { description: 'Send the buyer here' })
  url!: string;

  @Rest({ minimum: 1 })
  @Field(() => Int)
  credits!: number;

  @Rest({ pattern: MONEY_PATTERN })
  @Field(() => String, { description: 'What the buyer pays, decimal' })
  amount!: string;

  @Rest({ pattern: '^[a-z]{3}$' })
  @Field(() => String)
  currency!: string;

  @Field(() => Date)
  expiresAt!: Date;
}

@InputType('CreditTopupInput', { description: 'Credits to buy for the caller\'s company' })
export class CreditTopupInput {
  @Rest({ minimum: 1 })
  @Field(() => Int, { description: 'How many credits (TOPUP_MIN_CREDITS to TOPUP_MAX_CREDITS)' })
  credits!: number;
}

@InputType('TopupInput', { description: 'TopupRequest: credits to buy, and where the checkout returns' })
export class TopupInput {
  @Rest({ minimum: 1 })
  @Field(() => Int, { description: 'How many credits (TOPUP_MIN_CREDITS to TOPUP_MAX_CREDITS)' })
  credits!: number;

  @Rest({ maxLength: 2048 })
  @Field(() => String, { nullable: true, description: 'Return after payment: a URL under PUBLIC_URL or a CORS origin ({CHECKOUT_SESSION_ID} is filled in)' })
  successUrl?: string | null;

  @Rest({ maxLength: 2048 })
  @Field(() => String, { nullable: true, description: 'Return when the buyer gives up: a URL under PUBLIC_URL or a CORS origin' })
  cancelUrl?: string | null;
}

@ObjectType('PaymentMethod', { description: "A card of the company's processor customer; only brand, last four digits and expiry" })
export class PaymentMethodType {
  @Field(() => ID)
  id!: string;

  @Field(() => String)
  brand!: string;

  @Rest({ pattern: '^[0-9]{4}$' })
  @Field(() => String)
  last4!: string;

  @Rest({ minimum: 1, maximum: 12 })
  @Field(() => Int)
  expMonth!: number;

  @Field(() => Int)
  expYear!: number;

  @Field(() => Boolean, { description: "The customer's default for invoices" })
  isDefault!: boolean;
}

@ObjectType('Invoice', { description: "A processor invoice of the company (amounts as decimals in the invoice's currency)" })
export class InvoiceType {
  @Field(() => ID)
  id!: string;

  @Field(() => String, { nullable: true })
  number!: string | null;

  @Field(() => String, { description: 'draft, open, paid, uncollectible or void' })
  status!: string;

  @Rest({ pattern: MONEY_PATTERN })
  @Field(() => String)
  amountDue!: string;

  @Rest({ pattern: MONEY_PATTERN })
  @Field(() => String)
  amountPaid!: string;

  @Field(() => String)
  currency!: string;

  @Field(() => Date, { nullable: true })
  periodStart!: Date | null;

  @Field(() => Date, { nullable: true })
  periodEnd!: Date | null;

  @Rest({ format: 'uri' })
  @Field(() => String, { nullable: true, description: "The processor's page of the invoice" })
  hostedUrl!: string | null;

  @Field()
  createdAt!: Date;
}

export const InvoicePageType = PageType(InvoiceType, 'InvoicePage');

@ObjectType('CountByKey')
export class CountByKeyType {
  @Field(() => String)
  key!: string;

  @Rest({ minimum: 0 })
  @Field(() => Int)
  count!: number;
}

@ObjectType('BillingOverview', { description: 'Platform-wide billing figures (superadmins)' })
export class BillingOverviewType {
  @Rest({ minimum: 0 })
  @Field(() => Int)
  companies!: number;

  @Field(() => [CountByKeyType], { description: 'Companies per plan id' })
  byPlan!: CountByKeyType[];

  @Field(() => [CountByKeyType], { description: "Companies per subscription status ('none': no paid subscription)" })
  byStatus!: CountByKeyType[];

  @Rest({ pattern: MONEY_PATTERN })
  @Field(() => String, { description: 'Monthly recurring revenue, decimal: each live subscription\'s recurring price times its seats, else its last paid first-or-renewal invoice (at most 999999999.999999)' })
  mrr!: string;

  @Field(() => String)
  currency!: string;

  @Rest({ minimum: 0 })
  @Field(() => Int, { description: 'Monthly credits allocated over the last 30 days' })
  creditsAllocated30d!: number;

  @Rest({ minimum: 0 })
  @Field(() => Int, { description: 'Credits spent (committed) over the last 30 days' })
  creditsUsed30d!: number;

  @Rest({ minimum: 0 })
  @Field(() => Int, { description: "Failed invoice payments of companies over the last 30 days: the processor's events applied, not those that matched no company, arrived stale or were ignored" })
  failedPayments30d!: number;
}

@ObjectType('BillingCustomer', { description: 'A company with its plan and subscription (superadmins)' })
export class BillingCustomerType {
  @Field(() => ID)
  companyId!: string;

  @Field(() => String)
  name!: string;

  @Field(() => ID)
  planId!: string;

  @Rest({ enum: subscriptionStatuses })
  @Field(() => String, { nullable: true })
  status!: string | null;

  @Rest({ minimum: 0, maximum: MAX_SEATS })
  @Field(() => Int, { description: SEATS })
  seats!: number;

  @Field(() => Date, { nullable: true })
  periodEnd!: Date | null;

  @Field(() => Boolean)
  cancelAtPeriodEnd!: boolean;

  @Rest({ minimum: 0 })
  @Field(() => Int)
  creditsAvailable!: number;

  @Field(() => String, { nullable: true, description: "The processor's customer id" })
  customerId!: string | null;
}

export const BillingCustomerPageType = PageType(BillingCustomerType, 'BillingCustomerPage');
