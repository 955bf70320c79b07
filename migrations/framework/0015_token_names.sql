-- A personal access token's name is the framework's too: the opening statement reads it
-- (context/opening.ts), so that history and the tenant's activity name the token a person acted
-- with (docs/history.md). The same column auth/0006_token_names.sql adds, defined alike: on a
-- database where that ran, it is there and nothing changes; on a new one it is made here, before
-- the modules' migrations, and auth's `add column if not exists` then finds it. Where the table is
-- not there yet (0013_identity.sql makes it, auth/0006 then adds the name), nothing is done.
do $$
begin
  if to_regclass('access_tokens') is not null then
    alter table access_tokens add column if not exists name text not null check (length(name) between 1 and 100);
  end if;
end
$$;
