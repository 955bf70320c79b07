-- Every write evicts the tenant's cached ETags of public pages in every process.
call watch_public_read('contents');
