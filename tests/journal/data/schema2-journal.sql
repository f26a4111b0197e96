BEGIN TRANSACTION;
CREATE TABLE attempts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    payout_ref TEXT NOT NULL,
    run_id TEXT NOT NULL,
    quote_id TEXT NOT NULL,
    quote_json TEXT NOT NULL,
    body_json TEXT NOT NULL,
    quote_expires_at REAL NOT NULL,
    created_at TEXT NOT NULL,
    sends INTEGER NOT NULL DEFAULT 0,
    answered_at TEXT,
    outcome TEXT,
    http_status INTEGER,
    message TEXT
);
INSERT INTO "attempts" VALUES(1,'T-00001','20261127-044729-b48a','b0c45e0b-ee3e-454e-86f6-f0be29df6855','{"expiresInSeconds":600,"fee":{"amount":"1010.01"},"id":"b0c45e0b-ee3e-454e-86f6-f0be29df6855","paymentChannel":"BANK_TRANSFER","rate":230,"rules":[{"appliedCurrency":"CNY","category":"LIMIT","invoice":{"maximum":500000,"minimum":50000},"transaction":{"maximum":500000,"minimum":10}}],"settlementTime":"Within 24 hours (sandbox: 0.05 seconds)","source":{"amount":"101000.50","country":"NG","currency":"NGN"},"summary":{"total":"102010.51"},"target":{"amount":"439.13","country":"CN","currency":"CNY"}}','{"quoteId":"b0c45e0b-ee3e-454e-86f6-f0be29df6855","reason":"Invoice INV-00001","recipient":{"account":{"accountNumber":"6222000000000000001","bankCity":"深圳","bankName":"中国建设银行"},"country":"CN","currency":"CNY","icNumber":"440305198102111016","name":"张1","paymentChannel":"BANK_TRANSFER","type":"INDIVIDUAL"},"remark":"ref:T-00001"}',1.79575544990173220638e+09,'2026-11-27T04:47:29.923112Z',0,'2026-11-27T04:47:29.960051Z','accepted',NULL,'');
INSERT INTO "attempts" VALUES(2,'T-00002','20261127-044729-b48a','d2d3d3d1-be58-4cd1-b9d9-c4194f415f6b','{"expiresInSeconds":600,"fee":{"amount":"1020.01"},"id":"d2d3d3d1-be58-4cd1-b9d9-c4194f415f6b","paymentChannel":"BANK_TRANSFER","rate":230,"rules":[{"appliedCurrency":"CNY","category":"LIMIT","invoice":{"maximum":500000,"minimum":50000},"transaction":{"maximum":500000,"minimum":10}}],"settlementTime":"Within 24 hours (sandbox: 0.05 seconds)","source":{"amount":"102000.50","country":"NG","currency":"NGN"},"summary":{"total":"103020.51"},"target":{"amount":"443.48","country":"CN","currency":"CNY"}}','{"quoteId":"d2d3d3d1-be58-4cd1-b9d9-c4194f415f6b","reason":"Invoice INV-00002","recipient":{"account":{"accountNumber":"6222000000000000002","bankCity":"深圳","bankName":"中国银行"},"companyIdNumber":"91440300MA0000002P","companyName":"深圳市测试2电子有限公司","country":"CN","currency":"CNY","name":"深圳市测试2电子有限公司","paymentChannel":"BANK_TRANSFER","type":"BUSINESS"},"remark":"ref:T-00002"}',1.79575544993020701405e+09,'2026-11-27T04:47:29.932038Z',0,'2026-11-27T04:47:29.961804Z','accepted',NULL,'');
INSERT INTO "attempts" VALUES(3,'T-00003','20261127-044731-35b5','1dbd4a01-01bd-43b0-a373-f2372a3f8356','{"expiresInSeconds":600,"fee":{"amount":"1030.01"},"id":"1dbd4a01-01bd-43b0-a373-f2372a3f8356","paymentChannel":"BANK_TRANSFER","rate":230,"rules":[{"appliedCurrency":"CNY","category":"LIMIT","invoice":{"maximum":500000,"minimum":50000},"transaction":{"maximum":500000,"minimum":10}}],"settlementTime":"Within 24 hours (sandbox: 0.05 seconds)","source":{"amount":"103000.50","country":"NG","currency":"NGN"},"summary":{"total":"104030.51"},"target":{"amount":"447.83","country":"CN","currency":"CNY"}}','{"quoteId":"1dbd4a01-01bd-43b0-a373-f2372a3f8356","reason":"Invoice INV-00003","recipient":{"account":{"accountNumber":"6222000000000000003","bankCity":"深圳","bankName":"招商银行"},"country":"CN","currency":"CNY","icNumber":"440305198304131031","name":"张3","paymentChannel":"BANK_TRANSFER","type":"INDIVIDUAL"},"remark":"ref:T-00003"}',1.79575545156895637509e+09,'2026-11-27T04:47:31.581329Z',0,'2026-11-27T04:47:31.607333Z','accepted',NULL,'');
CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    kind TEXT NOT NULL,
    run_id TEXT NOT NULL DEFAULT '',
    payout_ref TEXT NOT NULL DEFAULT '',
    data TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
INSERT INTO "events" VALUES(1,'2026-11-27T04:47:29.758628Z','journal.bound','','','{"service":"http://127.0.0.1:8000"}','0000000000000000000000000000000000000000000000000000000000000000','508bca2df70850c7a4ae047b88465e3c330737e39cdf62f485785a471622eedd');
INSERT INTO "events" VALUES(2,'2026-11-27T04:47:29.865991Z','run.started','20261127-044729-b48a','','{"info":{"base_url":"http://127.0.0.1:8000","host":"finance-pc","journal":"/home/finance/payroll/journal/journal.sqlite3","key_fingerprint":"sha256:db6bcf6a2a36","operator":"finance","payee_changes":[{"confirmed_by":"","decision":"pay","details":{"account_number":"6222000000000000001","bank_city":"深圳","bank_name":"中国建设银行","recipient_name":"张1","sort_code":""},"fields":[],"last_paid":"","payee":"440305198102111016","payout_ref":"T-00001","reason":"new","row":2},{"confirmed_by":"","decision":"pay","details":{"account_number":"6222000000000000002","bank_city":"深圳","bank_name":"中国银行","recipient_name":"深圳市测试2电子有限公司","sort_code":""},"fields":[],"last_paid":"","payee":"91440300MA0000002P","payout_ref":"T-00002","reason":"new","row":3}],"sandbox":true,"service":"http://127.0.0.1:8000","service_list_check":{"amount_since":"2026-11-07T04:47:29Z","complete":true,"pages":1,"payouts_seen":0,"since":"2026-09-26T04:47:29Z"},"settings":{"allow_partial":false,"concurrency":4,"hold_new_payees":false,"max_rps":0.0,"payee_change_hold_hours":0.0,"payee_confirmed_by_other":false,"repeat_window_days":20,"require_approval":false,"service_check_days":62,"sheet":"","skip_invalid":false,"source_currency":"","wait":5.0},"tool_version":"0.1.0"},"input_sha256":"069aca89a18bb80a7799d4f485992c7f21eb7c707bf5684038041e8fdb542761","kind":"run","sheet":"nov.xlsx"}','508bca2df70850c7a4ae047b88465e3c330737e39cdf62f485785a471622eedd','dee2f5afcd7c7f508032f3d119506e32ddb78be0d05546bac5937d0dc8df4271');
INSERT INTO "events" VALUES(3,'2026-11-27T04:47:29.923509Z','payout.intent','20261127-044729-b48a','T-00001','{"amount":"101000.50","attempt":1,"body_sha256":"bcf64db2f40edb0e5a1e835fde501d46e6db76f148f755eb8d85b1ce85090dc3","details_sha256":"182031905d904c80829baf8df7e8d486240074ce9791bcd2cd8d29b0d9ab0e4b","error":"","fee":"1010.01","payout_id":"","quote_id":"b0c45e0b-ee3e-454e-86f6-f0be29df6855","quotes_used":null,"rate":"230","reference_number":"","source_currency":"NGN","status":"SENDING","target_amount":"439.13","target_currency":"CNY","total_debit":"102010.51"}','dee2f5afcd7c7f508032f3d119506e32ddb78be0d05546bac5937d0dc8df4271','c075142ded567a08c5c6a24e14430d7c414d5d5c98a73dc91bc8f1eab40122ad');
INSERT INTO "events" VALUES(4,'2026-11-27T04:47:29.932251Z','payout.intent','20261127-044729-b48a','T-00002','{"amount":"102000.50","attempt":2,"body_sha256":"1273c633397ea0ff40cb27c4b8e649a23ae5a52674c7b1211401eb0941813bfc","details_sha256":"0b4cb2da66e1f3aceaffb948e54e63d32aa0a975302835a2325a4494c61bfc2c","error":"","fee":"1020.01","payout_id":"","quote_id":"d2d3d3d1-be58-4cd1-b9d9-c4194f415f6b","quotes_used":null,"rate":"230","reference_number":"","source_currency":"NGN","status":"SENDING","target_amount":"443.48","target_currency":"CNY","total_debit":"103020.51"}','c075142ded567a08c5c6a24e14430d7c414d5d5c98a73dc91bc8f1eab40122ad','43c6982a871d458ca455d6d343ab973df0d239d32ddec3bf5f09d6daf5447f3d');
INSERT INTO "events" VALUES(5,'2026-11-27T04:47:29.960239Z','payout.accepted','20261127-044729-b48a','T-00001','{"payout_id":"f5ad99e9-7350-4a65-8cca-6325b022a528","reference_number":"DJPFBKVK410A2","status":"PENDING"}','43c6982a871d458ca455d6d343ab973df0d239d32ddec3bf5f09d6daf5447f3d','2914abf2389694c8b9b3398e0ccaacc55c76d14bb47f96a2a3c22b665fbf6aa5');
INSERT INTO "events" VALUES(6,'2026-11-27T04:47:29.961890Z','payout.accepted','20261127-044729-b48a','T-00002','{"payout_id":"abe591e2-e9f9-4481-9312-859243adcaf9","reference_number":"H1O3BSRNKPA3M","status":"PENDING"}','2914abf2389694c8b9b3398e0ccaacc55c76d14bb47f96a2a3c22b665fbf6aa5','067e518fc79847f87eabd67383e2ddd498c551431dbc392a427defb6e22ed3d4');
INSERT INTO "events" VALUES(7,'2026-11-27T04:47:30.476058Z','payout.poll','','T-00001','{"payout_id":"f5ad99e9-7350-4a65-8cca-6325b022a528","reference_number":"DJPFBKVK410A2","status":"COMPLETED"}','067e518fc79847f87eabd67383e2ddd498c551431dbc392a427defb6e22ed3d4','092b75da149742ffc60f1215bfe228d935696e20c8884bc0a8eb324f68012824');
INSERT INTO "events" VALUES(8,'2026-11-27T04:47:30.476598Z','payout.poll','','T-00002','{"payout_id":"abe591e2-e9f9-4481-9312-859243adcaf9","reference_number":"H1O3BSRNKPA3M","status":"COMPLETED"}','092b75da149742ffc60f1215bfe228d935696e20c8884bc0a8eb324f68012824','c6d4a49c6c7f4c07257bee7df112d2bab79cfcb017072220f16920c6825e781c');
INSERT INTO "events" VALUES(9,'2026-11-27T04:47:30.498921Z','run.finished','20261127-044729-b48a','','{"counts":{"COMPLETED":2},"exit_code":0,"outcome":"ok","results":"/home/finance/payroll/nov-results.xlsx","sent_rows":{"NGN":2},"totals":{"NGN":"205031.02"},"wallet_after":{"NGN":"9999794968.98"},"wallet_before":{"NGN":"10000000000"}}','c6d4a49c6c7f4c07257bee7df112d2bab79cfcb017072220f16920c6825e781c','822e9cfc3220105fef455cd06c1886ec671c0f5b65cf1e2fe12523e2385e1eca');
INSERT INTO "events" VALUES(10,'2026-11-27T04:47:31.552048Z','run.started','20261127-044731-35b5','','{"info":{"base_url":"http://127.0.0.1:8000","host":"finance-pc","journal":"/home/finance/payroll/journal/journal.sqlite3","key_fingerprint":"sha256:db6bcf6a2a36","operator":"finance","payee_changes":[{"confirmed_by":"","decision":"pay","details":{"account_number":"6222000000000000003","bank_city":"深圳","bank_name":"招商银行","recipient_name":"张3","sort_code":""},"fields":[],"last_paid":"","payee":"440305198304131031","payout_ref":"T-00003","reason":"new","row":2}],"sandbox":true,"service":"http://127.0.0.1:8000","service_list_check":{"amount_since":"2026-11-07T04:47:31Z","complete":true,"pages":1,"payouts_seen":2,"since":"2026-09-26T04:47:31Z"},"settings":{"allow_partial":false,"concurrency":4,"hold_new_payees":false,"max_rps":0.0,"payee_change_hold_hours":0.0,"payee_confirmed_by_other":false,"repeat_window_days":20,"require_approval":false,"service_check_days":62,"sheet":"","skip_invalid":false,"source_currency":"","wait":5.0},"tool_version":"0.1.0"},"input_sha256":"9f402e5f45857fab905ae0a5600119736f74d7b40ff95a84e7437a1c9509de2b","kind":"run","sheet":"nov2.xlsx"}','822e9cfc3220105fef455cd06c1886ec671c0f5b65cf1e2fe12523e2385e1eca','fdfa0039a1172b8859e7f70dc6dfe9bfe12dbfc1ffdfdecc68d95a48bc6d1617');
INSERT INTO "events" VALUES(11,'2026-11-27T04:47:31.581641Z','payout.intent','20261127-044731-35b5','T-00003','{"amount":"103000.50","attempt":3,"body_sha256":"51975b12fdee69e96d1faf6045b857a8898bead867f3d4745e1041756cb6f0c8","details_sha256":"4a4cdfa9da519d83d20ecd580a512aa790480d19a4ebc6663131c73e7e7256a2","error":"","fee":"1030.01","payout_id":"","quote_id":"1dbd4a01-01bd-43b0-a373-f2372a3f8356","quotes_used":null,"rate":"230","reference_number":"","source_currency":"NGN","status":"SENDING","target_amount":"447.83","target_currency":"CNY","total_debit":"104030.51"}','fdfa0039a1172b8859e7f70dc6dfe9bfe12dbfc1ffdfdecc68d95a48bc6d1617','319d0de748733a77be964d0a0b62064345c311384a81c889bc9c200a1fd402ef');
INSERT INTO "events" VALUES(12,'2026-11-27T04:47:31.607513Z','payout.accepted','20261127-044731-35b5','T-00003','{"payout_id":"0faf631b-7854-4a17-bbc5-e8513b9a80c9","reference_number":"2MKAOU68PLUUC","status":"PENDING"}','319d0de748733a77be964d0a0b62064345c311384a81c889bc9c200a1fd402ef','c390f0834e22f29e9103382b9c047b2b8a1ec85fd559beaa9f87f241e4d44bb3');
INSERT INTO "events" VALUES(13,'2026-11-27T04:47:32.116404Z','payout.poll','','T-00003','{"payout_id":"0faf631b-7854-4a17-bbc5-e8513b9a80c9","reference_number":"2MKAOU68PLUUC","status":"COMPLETED"}','c390f0834e22f29e9103382b9c047b2b8a1ec85fd559beaa9f87f241e4d44bb3','402f9f5ed34b47336927588bff8c69f072c388b8209372e43148788aac3ee1a7');
INSERT INTO "events" VALUES(14,'2026-11-27T04:47:32.120971Z','run.finished','20261127-044731-35b5','','{"counts":{"COMPLETED":1},"exit_code":0,"outcome":"ok","results":"/home/finance/payroll/nov2-results.xlsx","sent_rows":{"NGN":1},"totals":{"NGN":"104030.51"},"wallet_after":{"NGN":"8999690938.47"},"wallet_before":{"NGN":"8999794968.98"}}','402f9f5ed34b47336927588bff8c69f072c388b8209372e43148788aac3ee1a7','4a316a4ebce2177a818bef146ed4f79f7ccff63aeee7c040ce20750fd8c76d67');
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO "meta" VALUES('service','http://127.0.0.1:8000');
INSERT INTO "meta" VALUES('chain_key','ec3a4820251ff884');
INSERT INTO "meta" VALUES('chain_keyed_from','1');
CREATE TABLE payouts (
    payout_ref TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    details TEXT NOT NULL,
    run_id TEXT NOT NULL,
    attempt_id INTEGER,
    error TEXT NOT NULL DEFAULT '',
    quote_id TEXT NOT NULL DEFAULT '',
    payout_id TEXT NOT NULL DEFAULT '',
    reference_number TEXT NOT NULL DEFAULT '',
    rate TEXT, fee TEXT, target_amount TEXT, total_debit TEXT,
    amount TEXT, source_currency TEXT NOT NULL DEFAULT '', target_currency TEXT NOT NULL DEFAULT '',
    updated_at TEXT NOT NULL,
    quotes_used INTEGER
);
INSERT INTO "payouts" VALUES('T-00001','COMPLETED','{"account_number":"6222000000000000001","amount":"101000.5","bank_city":"深圳","bank_name":"中国建设银行","company_id":"","company_name":"","country":"CN","currency":"CNY","ic_number":"440305198102111016","payment_channel":"BANK_TRANSFER","recipient_name":"张1","recipient_type":"INDIVIDUAL","sort_code":"","source_currency":"NGN"}','20261127-044729-b48a',1,'','b0c45e0b-ee3e-454e-86f6-f0be29df6855','f5ad99e9-7350-4a65-8cca-6325b022a528','DJPFBKVK410A2','230','1010.01','439.13','102010.51','101000.50','NGN','CNY','2026-11-27T04:47:30.475942Z',NULL);
INSERT INTO "payouts" VALUES('T-00002','COMPLETED','{"account_number":"6222000000000000002","amount":"102000.5","bank_city":"深圳","bank_name":"中国银行","company_id":"91440300MA0000002P","company_name":"深圳市测试2电子有限公司","country":"CN","currency":"CNY","ic_number":"","payment_channel":"BANK_TRANSFER","recipient_name":"深圳市测试2电子有限公司","recipient_type":"BUSINESS","sort_code":"","source_currency":"NGN"}','20261127-044729-b48a',2,'','d2d3d3d1-be58-4cd1-b9d9-c4194f415f6b','abe591e2-e9f9-4481-9312-859243adcaf9','H1O3BSRNKPA3M','230','1020.01','443.48','103020.51','102000.50','NGN','CNY','2026-11-27T04:47:30.476553Z',NULL);
INSERT INTO "payouts" VALUES('T-00003','COMPLETED','{"account_number":"6222000000000000003","amount":"103000.5","bank_city":"深圳","bank_name":"招商银行","company_id":"","company_name":"","country":"CN","currency":"CNY","ic_number":"440305198304131031","payment_channel":"BANK_TRANSFER","recipient_name":"张3","recipient_type":"INDIVIDUAL","sort_code":"","source_currency":"NGN"}','20261127-044731-35b5',3,'','1dbd4a01-01bd-43b0-a373-f2372a3f8356','0faf631b-7854-4a17-bbc5-e8513b9a80c9','2MKAOU68PLUUC','230','1030.01','447.83','104030.51','103000.50','NGN','CNY','2026-11-27T04:47:32.116305Z',NULL);
CREATE TABLE run_rows (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    row INTEGER NOT NULL,
    payout_ref TEXT NOT NULL,
    inputs TEXT NOT NULL,
    linked INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL,
    error TEXT NOT NULL DEFAULT '',
    warning TEXT NOT NULL DEFAULT '',
    amount TEXT, source_currency TEXT NOT NULL DEFAULT '', target_currency TEXT NOT NULL DEFAULT '',
    quote_id TEXT NOT NULL DEFAULT '', rate TEXT, fee TEXT, target_amount TEXT, total_debit TEXT,
    updated_at TEXT NOT NULL DEFAULT '',
    quotes_used INTEGER,
    asked TEXT,
    PRIMARY KEY (run_id, seq)
);
INSERT INTO "run_rows" VALUES('20261127-044729-b48a',0,2,'T-00001','["T-00001","INDIVIDUAL","张1",null,null,"440305198102111016","6222000000000000001","中国建设银行","深圳",{"$d":"101000.5"},"NGN","Invoice INV-00001",null]',1,'NOT_SENT','','','101000.50','NGN','CNY','',NULL,NULL,NULL,NULL,'',NULL,NULL);
INSERT INTO "run_rows" VALUES('20261127-044729-b48a',1,3,'T-00002','["T-00002","BUSINESS","深圳市测试2电子有限公司","深圳市测试2电子有限公司","91440300MA0000002P",null,"6222000000000000002","中国银行","深圳",{"$d":"102000.5"},"NGN","Invoice INV-00002",null]',1,'NOT_SENT','','','102000.50','NGN','CNY','',NULL,NULL,NULL,NULL,'',NULL,NULL);
INSERT INTO "run_rows" VALUES('20261127-044731-35b5',0,2,'T-00003','["T-00003","INDIVIDUAL","张3",null,null,"440305198304131031","6222000000000000003","招商银行","深圳",{"$d":"103000.5"},"NGN","Invoice INV-00003",null]',1,'NOT_SENT','','','103000.50','NGN','CNY','',NULL,NULL,NULL,NULL,'',NULL,NULL);
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    sheet TEXT NOT NULL,
    input_sha256 TEXT NOT NULL,
    input_columns TEXT NOT NULL,
    info TEXT NOT NULL,
    outcome TEXT,
    exit_code INTEGER
);
INSERT INTO "runs" VALUES('20261127-044729-b48a','run','2026-11-27T04:47:29.865292Z','2026-11-27T04:47:30.494520Z','nov.xlsx','069aca89a18bb80a7799d4f485992c7f21eb7c707bf5684038041e8fdb542761','["payout_ref", "recipient_type", "recipient_name", "company_name", "company_id", "ic_number", "account_number", "bank_name", "bank_city", "amount", "source_currency", "reason", "remark"]','{"base_url":"http://127.0.0.1:8000","counts":{"COMPLETED":2},"host":"finance-pc","journal":"/home/finance/payroll/journal/journal.sqlite3","key_fingerprint":"sha256:db6bcf6a2a36","operator":"finance","payee_changes":[{"confirmed_by":"","decision":"pay","details":{"account_number":"6222000000000000001","bank_city":"深圳","bank_name":"中国建设银行","recipient_name":"张1","sort_code":""},"fields":[],"last_paid":"","payee":"440305198102111016","payout_ref":"T-00001","reason":"new","row":2},{"confirmed_by":"","decision":"pay","details":{"account_number":"6222000000000000002","bank_city":"深圳","bank_name":"中国银行","recipient_name":"深圳市测试2电子有限公司","sort_code":""},"fields":[],"last_paid":"","payee":"91440300MA0000002P","payout_ref":"T-00002","reason":"new","row":3}],"results":"/home/finance/payroll/nov-results.xlsx","sandbox":true,"sent_rows":{"NGN":2},"service":"http://127.0.0.1:8000","service_list_check":{"amount_since":"2026-11-07T04:47:29Z","complete":true,"pages":1,"payouts_seen":0,"since":"2026-09-26T04:47:29Z"},"settings":{"allow_partial":false,"concurrency":4,"hold_new_payees":false,"max_rps":0.0,"payee_change_hold_hours":0.0,"payee_confirmed_by_other":false,"repeat_window_days":20,"require_approval":false,"service_check_days":62,"sheet":"","skip_invalid":false,"source_currency":"","wait":5.0},"tool_version":"0.1.0","totals":{"NGN":"205031.02"},"wallet_after":{"NGN":"9999794968.98"},"wallet_before":{"NGN":"10000000000"}}','ok',0);
INSERT INTO "runs" VALUES('20261127-044731-35b5','run','2026-11-27T04:47:31.551420Z','2026-11-27T04:47:32.120852Z','nov2.xlsx','9f402e5f45857fab905ae0a5600119736f74d7b40ff95a84e7437a1c9509de2b','["payout_ref", "recipient_type", "recipient_name", "company_name", "company_id", "ic_number", "account_number", "bank_name", "bank_city", "amount", "source_currency", "reason", "remark"]','{"base_url":"http://127.0.0.1:8000","counts":{"COMPLETED":1},"host":"finance-pc","journal":"/home/finance/payroll/journal/journal.sqlite3","key_fingerprint":"sha256:db6bcf6a2a36","operator":"finance","payee_changes":[{"confirmed_by":"","decision":"pay","details":{"account_number":"6222000000000000003","bank_city":"深圳","bank_name":"招商银行","recipient_name":"张3","sort_code":""},"fields":[],"last_paid":"","payee":"440305198304131031","payout_ref":"T-00003","reason":"new","row":2}],"results":"/home/finance/payroll/nov2-results.xlsx","sandbox":true,"sent_rows":{"NGN":1},"service":"http://127.0.0.1:8000","service_list_check":{"amount_since":"2026-11-07T04:47:31Z","complete":true,"pages":1,"payouts_seen":2,"since":"2026-09-26T04:47:31Z"},"settings":{"allow_partial":false,"concurrency":4,"hold_new_payees":false,"max_rps":0.0,"payee_change_hold_hours":0.0,"payee_confirmed_by_other":false,"repeat_window_days":20,"require_approval":false,"service_check_days":62,"sheet":"","skip_invalid":false,"source_currency":"","wait":5.0},"tool_version":"0.1.0","totals":{"NGN":"104030.51"},"wallet_after":{"NGN":"8999690938.47"},"wallet_before":{"NGN":"8999794968.98"}}','ok',0);
CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL);
INSERT INTO "schema_version" VALUES(2,'2026-11-27T04:47:29.560051Z');
CREATE INDEX payouts_status ON payouts(status);
CREATE INDEX payouts_payout_id ON payouts(payout_id);
CREATE INDEX payouts_quote_id ON payouts(quote_id);
CREATE INDEX attempts_ref ON attempts(payout_ref);
CREATE INDEX attempts_quote ON attempts(quote_id);
DELETE FROM "sqlite_sequence";
INSERT INTO "sqlite_sequence" VALUES('events',14);
INSERT INTO "sqlite_sequence" VALUES('attempts',3);
COMMIT;
