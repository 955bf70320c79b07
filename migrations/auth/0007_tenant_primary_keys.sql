-- Primary keys carry tenant_id, as framework/0016_tenant_primary_keys.sql says why (issue 49).
alter table set_password_tokens drop constraint set_password_tokens_pkey, add constraint set_password_tokens_pkey primary key (tenant_id, id);
alter table auth_attempts drop constraint auth_attempts_pkey, add constraint auth_attempts_pkey primary key (tenant_id, id);
