import { Field, ObjectType } from 'type-graphql';

@ObjectType('EmailChangeRequest', {
  description: 'A pending change of the caller\'s email: confirmed by the link mailed to the new address',
})
export class EmailChangeRequestType {
  @Field({ description: 'The requested address (lower-cased); the account keeps its current one until confirmation' })
  newEmail!: string;

  @Field({ description: 'Until when the confirmation link works' })
  expiresAt!: Date;
}

@ObjectType('AccountDeletion', { description: 'A scheduled deletion of the caller\'s account' })
export class AccountDeletionType {
  @Field({ description: 'When the account is deleted unless cancelAccountDeletion is called before' })
  scheduledFor!: Date;
}
