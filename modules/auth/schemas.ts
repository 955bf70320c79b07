import Type from 'typebox';

/** A problem+json answer in a route's responses, with what it means there. */
export const problemRef = (description: string) => ({ ...Type.Ref('Problem'), description });

export const NoContent = Type.Null({ description: 'No content' });

export const Email = Type.String({ minLength: 1, maxLength: 320, description: 'The address the person signs in with; compared case-insensitively' });
