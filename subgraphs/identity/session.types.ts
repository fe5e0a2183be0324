import { PageType } from '../page';
import { Field, ID, ObjectType } from 'type-graphql';
import { Rest } from '../rest';

@ObjectType('Session', { description: 'One sign-in of the caller; its access and refresh tokens live and die with it' })
export class SessionType {
  @Rest({ format: 'uuid' })
  @Field(() => ID)
  id!: string;

  @Field(() => String, {
    nullable: true,
    description: 'Browser and OS family (or tool name) read from the user agent, e.g. "Firefox on Linux"; null when unknown',
  })
  device!: string | null;

  @Field(() => String, { nullable: true, description: 'The User-Agent header sent at sign-in (first 512 characters)' })
  userAgent!: string | null;

  @Field(() => String, { nullable: true, description: 'Client IP address at sign-in' })
  ip!: string | null;

  @Field({ description: 'When the session signed in' })
  createdAt!: Date;

  @Field({ description: 'Last request seen on this session (updated at most about once a minute)' })
  lastSeenAt!: Date;

  @Field({ description: 'Whether this is the session of the access token making the request' })
  current!: boolean;
}

export const SessionPageType = PageType(SessionType, 'SessionPage');
