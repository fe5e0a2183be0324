import { Arg, Ctx, Field, ID, InputType, Int, Mutation, ObjectType, Query, Resolver } from 'type-graphql';
import { Access } from '../policy/access';
import { Rest, RestArgs, UUID } from '../rest';
import { documentKinds, RAG_DOC_IDS_MAX, RAG_QUERY_MAX, type DocumentsApi, type DocumentsService } from '../../src/domains/documents';
import { MODEL_NAME_MAX } from '../../src/domains/catalog';
import type { GraphQLContext } from '../context';

@ObjectType('Document', { description: "One of the caller's uploaded documents (its text is indexed; the file is not kept)" })
export class DocumentType {
  @Rest({ format: 'uuid' })
  @Field(() => ID)
  docId!: string;

  @Field()
  filename!: string;

  @Rest({ enum: documentKinds })
  @Field({ description: `${documentKinds.join(', ')}: decided by the content` })
  type!: string;

  @Field()
  mime!: string;

  @Field(() => Int, { description: 'Size of the uploaded file in bytes' })
  sizeBytes!: number;

  @Field(() => Int, { description: 'PDF pages, Excel sheets; 1 otherwise' })
  pages!: number;

  @Field(() => Int, { description: 'Indexed passages' })
  chunks!: number;

  @Field()
  createdAt!: Date;
}

@InputType('RagQueryInput')
export class RagQueryInput {
  @Rest({ minLength: 1, maxLength: RAG_QUERY_MAX })
  @Field({ description: `The question, 1 to ${RAG_QUERY_MAX} characters` })
  query!: string;

  @Rest({ minItems: 1, maxItems: RAG_DOC_IDS_MAX, items: { format: 'uuid' } })
  @Field(() => [ID], { nullable: true, description: "Search only these of the caller's documents (all when omitted); another user's is 404" })
  docIds?: string[] | null;

  @Rest({ minLength: 1, maxLength: MODEL_NAME_MAX })
  @Field(() => String, { nullable: true, description: 'A catalog model id or a model family' })
  model?: string | null;
}

@ObjectType('RagSource', { description: 'A passage the answer is grounded in' })
export class RagSourceType {
  @Rest({ format: 'uuid' })
  @Field(() => ID)
  docId!: string;

  @Field()
  filename!: string;

  @Field(() => Int)
  page!: number;

  @Field()
  snippet!: string;

  @Field({ description: 'BM25 relevance, higher is better' })
  score!: number;
}

@ObjectType('RagAnswer')
export class RagAnswerType {
  @Field()
  answer!: string;

  @Rest({ enum: ['model', 'extractive'] })
  @Field({ description: 'model: written by the model from the passages; extractive: their best sentences, without a provider' })
  engine!: string;

  @Field(() => [RagSourceType])
  sources!: RagSourceType[];

  @Field(() => Int)
  tokens!: number;

  @Field(() => Int)
  creditsUsed!: number;
}

/** Document question answering for signed-in users and AI-modules keys (scope rag). Uploads are REST only (multipart). */
@Resolver()
export class DocumentsResolver {
  static from = ({ documents }: { documents: DocumentsApi }) => new DocumentsResolver(documents.documents);

  constructor(private readonly documents: DocumentsService) {}

  @Access({ auth: 'modules' })
  @Query(() => [DocumentType], { description: "The caller's documents, newest first (scope rag)" })
  documentList(@Ctx() ctx: GraphQLContext) {
    return this.documents.list(ctx.principal);
  }

  @Access({ auth: 'modules' })
  @RestArgs({ docId: UUID })
  @Mutation(() => Boolean, { description: "Deletes one of the caller's documents and its passages (scope rag); another user's is 404" })
  async deleteDocument(@Arg('docId', () => ID) docId: string, @Ctx() ctx: GraphQLContext) {
    await this.documents.delete(ctx.principal, docId);
    return true;
  }

  @Access({ auth: 'modules' })
  @Mutation(() => RagAnswerType, {
    description:
      "Answers a question from the best passages (SQLite FTS5, BM25) of the caller's documents, with their sources (scope rag). " +
      "With a provider the model writes the answer: tokens ÷ 1,000 × the model's credit cost, rounded up. Without one " +
      'the answer is extractive (engine: extractive) and free.',
  })
  ragQuery(@Arg('input', () => RagQueryInput) input: RagQueryInput, @Ctx() ctx: GraphQLContext) {
    return this.documents.query(ctx.principal, input, ctx.meta);
  }
}
