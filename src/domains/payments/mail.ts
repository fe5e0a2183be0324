/**
 * The billing mails to a company's owners, one per processor event. Each
 * returns a rendered mail (text and HTML) for `Mailer.enqueue`.
 */
import { formatUtc, oneLine, PRODUCT, render, type MailContent } from '../../mail/templates';

export type BillingMailKind = 'subscription_started' | 'subscription_renewed' | 'payment_failed' | 'subscription_cancelled' | 'trial_ending_in_2d';

export interface BillingMailInput {
  name: string | null;
  company: string;
  plan: string;
  periodEnd: Date | null;
  trialEnd: Date | null;
  credits: number | null;
}

const until = (date: Date | null) => (date ? ` until ${formatUtc(date)}` : '');

export function billingMail(kind: BillingMailKind, input: BillingMailInput): MailContent {
  const company = oneLine(input.company);
  const plan = oneLine(input.plan);
  switch (kind) {
    case 'subscription_started':
      return render({
        template: kind,
        subject: `Your ${PRODUCT} ${plan} subscription has started`,
        name: input.name,
        intro: [
          `${company} is now on the ${plan} plan${until(input.periodEnd)}.`,
          ...(input.credits !== null ? [`${input.credits} credits are available for this period.`] : []),
        ],
        outro: ['Thank you for subscribing.'],
      });
    case 'subscription_renewed':
      return render({
        template: kind,
        subject: `Your ${PRODUCT} subscription was renewed`,
        name: input.name,
        intro: [
          `The ${plan} subscription of ${company} was renewed${until(input.periodEnd)}.`,
          ...(input.credits !== null ? [`${input.credits} credits are available for the new period; the unused monthly credits of the last one have expired.`] : []),
        ],
      });
    case 'payment_failed':
      return render({
        template: kind,
        subject: `Payment for your ${PRODUCT} subscription failed`,
        name: input.name,
        intro: [
          `The latest payment for the ${plan} subscription of ${company} did not go through, and the subscription is past due.`,
          'Please update the payment method in the billing settings; the payment is retried automatically.',
        ],
      });
    case 'subscription_cancelled':
      return render({
        template: kind,
        subject: `Your ${PRODUCT} subscription was cancelled`,
        name: input.name,
        intro: [
          `The ${plan} subscription of ${company} has ended.`,
          'The company is back on the starter plan from its next monthly allocation; purchased and granted credits stay.',
        ],
      });
    case 'trial_ending_in_2d':
      return render({
        template: kind,
        subject: `Your ${PRODUCT} trial ends soon`,
        name: input.name,
        intro: [`The ${plan} trial of ${company} ends${input.trialEnd ? ` on ${formatUtc(input.trialEnd)}` : ' soon'}.`, 'Add a payment method to keep the plan.'],
      });
  }
}
