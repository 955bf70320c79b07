import { defineProblems, type ProblemCodesOf } from '../../framework/entity/define.ts';

/** The file module's refusals of an upload (docs/files.md). */
export const fileProblems = defineProblems({
  FILE_TOO_LARGE: {
    status: 413,
    title: 'File larger than the upload limit',
    sentence: 'The file is larger than the upload limit.',
  },
  QUOTA_EXCEEDED: {
    status: 413,
    title: "File past the tenant's storage quota",
    sentence: 'The file does not fit in the storage left to this tenant.',
  },
  FILE_MISSING: { status: 422, title: 'The form has no file part', sentence: 'Choose a file to upload.' },
  MEDIA_TYPE_INVALID: {
    status: 422,
    title: 'Invalid media type',
    sentence: 'The file’s type is not one the service accepts.',
  },
  MEDIA_TYPE_MISMATCH: {
    status: 422,
    title: 'The bytes disagree with the media type',
    sentence: 'The file’s contents do not match its type.',
  },
});

declare module '../../framework/contracts/problems.ts' {
  interface ProblemCodes extends ProblemCodesOf<typeof fileProblems> {}
}
