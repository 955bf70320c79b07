import type { Generated, Selectable } from 'kysely';
import Type from 'typebox';
import { declareUniqueKeys } from '../../framework/db/unique-keys.ts';
import { declareExportBlobs } from '../../framework/bulk/tenant-export/exclusions.ts';
import { StringEnum } from '../../framework/entity/string-enum.ts';

export interface FilesTable {
  id: Generated<string>;
  tenant_id: Generated<string>;
  storage_key: string;
  name: string;
  size: number;
  sha256: string;
  media_type: string;
  visibility: 'public' | 'private';
  uploaded_by: string | null;
  created_at: Generated<Date>;
}

declare module '../../framework/contracts/database.ts' {
  interface Database {
    files: FilesTable;
  }
}

// The storage key is a UUID the service makes: a collision is refused in words, never by the index's name.
declareUniqueKeys({
  files_storage_key: { fields: [], detail: 'A file with this storage key already exists; upload it again' },
});

export type FileRow = Selectable<FilesTable>;

export const Visibility = StringEnum(['public', 'private'], {
  description: 'public: also served at /api/v1/file/public/{id}',
});

/** The file record every route answers with. The storage key never leaves the service. */
export const FileRecord = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    name: Type.String({ description: "The part's file name, sanitised: for display and Content-Disposition only" }),
    size: Type.Integer({ minimum: 0, description: 'Bytes that arrived' }),
    sha256: Type.String({ pattern: '^[0-9a-f]{64}$', description: 'SHA-256 of the bytes that arrived, hex' }),
    mediaType: Type.String({ description: 'The declared media type (the part Content-Type)' }),
    visibility: Visibility,
    uploadedBy: Type.Union([Type.String({ format: 'uuid' }), Type.Null()]),
    createdAt: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false, title: 'File' },
);

export interface FileRecordValue {
  id: string;
  name: string;
  size: number;
  sha256: string;
  mediaType: string;
  visibility: 'public' | 'private';
  uploadedBy: string | null;
  createdAt: Date;
}

export const toRecord = (row: FileRow): FileRecordValue => ({
  id: row.id,
  name: row.name,
  size: row.size,
  sha256: row.sha256,
  mediaType: row.media_type,
  visibility: row.visibility,
  uploadedBy: row.uploaded_by,
  createdAt: row.created_at,
});

// A tenant's export carries every file's bytes, named by the file's id (framework/bulk/tenant-export/).
declareExportBlobs({ files: { key: 'storage_key', name: 'id' } });
