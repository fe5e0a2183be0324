import { test } from 'node:test';
import { execute, parse } from 'graphql';
import assert from 'node:assert/strict';
import { Arg, Ctx, Field, FieldResolver, InputType, ObjectType, Query, Resolver, Root } from 'type-graphql';
import { buildSubgraph } from '../subgraphs/build-subgraph';
import { Access } from '../subgraphs/policy/access';
import { ResolverContainer, type GraphQLContext } from '../subgraphs/context';

// Global type-graphql metadata: this file's classes are the only ones built in its process.

@InputType('EchoInput')
class EchoInput {
  @Field()
  text!: string;
}

@ObjectType('Echo')
class EchoType {
  @Field()
  text!: string;
}

@Resolver(() => EchoType)
class EchoResolver {
  static from = () => new EchoResolver();
  calls = 0;

  @Access({ auth: 'public' })
  @Query(() => EchoType)
  echo(@Arg('input', () => EchoInput) input: EchoInput, @Ctx() ctx: GraphQLContext) {
    this.calls++;
    return { text: `${input.text} ${ctx.meta.ip}` };
  }

  @FieldResolver(() => String)
  shout(@Root() echo: { text: string }) {
    return echo.text.toUpperCase();
  }
}

@InputType('DefaultedInput')
class DefaultedInput {
  @Field()
  limit: number = 50;
}

@Resolver()
class DefaultedResolver {
  static from = () => new DefaultedResolver();

  @Access({ auth: 'public' })
  @Query(() => String)
  defaulted(@Arg('input', () => DefaultedInput) input: DefaultedInput) {
    return String(input.limit);
  }
}

test('a resolver with arguments answers synchronously when its method does: no promise per argument', async () => {
  const built = await buildSubgraph({ name: 'identity', domains: [], resolvers: [EchoResolver] });
  const instance = EchoResolver.from();
  const contextValue = {
    principal: { kind: 'anonymous' },
    meta: { ip: '127.0.0.1', requestId: 'r1' },
    container: new ResolverContainer([instance]),
  } as unknown as GraphQLContext;
  const result = execute({ schema: built.schema, document: parse('{ echo(input: { text: "hi" }) { text shout } }'), contextValue });
  assert.ok(!(result instanceof Promise), 'the operation answered through a promise');
  assert.deepEqual(JSON.parse(JSON.stringify(result)), { data: { echo: { text: 'hi 127.0.0.1', shout: 'HI 127.0.0.1' } } });
  assert.equal(instance.calls, 1);
});

test('an input class with a property initialiser stops the build: resolvers receive inputs as plain objects', async () => {
  await assert.rejects(
    buildSubgraph({ name: 'admin', domains: [], resolvers: [DefaultedResolver] }),
    /Input type DefaultedInput has limit: resolvers receive inputs as plain objects/,
  );
});
