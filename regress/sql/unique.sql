--
-- unique: CREATE UNIQUE INDEX ... USING forein, violations on insert and
-- update, NULLs never conflict, build failure on duplicates.
--
SET enable_seqscan = off;
SET enable_bitmapscan = off;

CREATE TABLE users (id int4, email text);
CREATE UNIQUE INDEX users_email ON users USING forein (email);
CREATE UNIQUE INDEX users_id ON users USING forein (id);
INSERT INTO users SELECT g, 'user' || g || '@example.com' FROM generate_series(1, 5000) g;
INSERT INTO users VALUES (5001, 'user42@example.com');
INSERT INTO users VALUES (42, 'new@example.com');
INSERT INTO users VALUES (5001, 'USER42@example.com');
UPDATE users SET email = 'user43@example.com' WHERE id = 42;
UPDATE users SET id = id + 1 WHERE id = 4999;
-- a unique key may be updated to itself, deleted and reinserted
UPDATE users SET email = email WHERE id = 7;
DELETE FROM users WHERE id = 8;
INSERT INTO users VALUES (8, 'user8@example.com');
-- a duplicate within one statement
INSERT INTO users VALUES (6000, 'a@x'), (6001, 'a@x');
-- NULLs are distinct
INSERT INTO users VALUES (NULL, NULL), (NULL, NULL);
SELECT count(*) FROM users WHERE email IS NULL;
-- (ON CONFLICT needs a btree arbiter in PostgreSQL 15: see errors.sql)
-- a conflict against a row deleted in the same transaction is no conflict
BEGIN;
DELETE FROM users WHERE id = 10;
INSERT INTO users VALUES (10, 'user10@example.com');
COMMIT;
-- a rolled-back insert leaves the key free
BEGIN;
INSERT INTO users VALUES (7000, 'rollback@example.com');
ROLLBACK;
INSERT INTO users VALUES (7000, 'rollback@example.com');
-- a savepoint rolled back, then the key reused
BEGIN;
SAVEPOINT s;
INSERT INTO users VALUES (7001, 'sp@example.com');
ROLLBACK TO s;
INSERT INTO users VALUES (7001, 'sp@example.com');
COMMIT;
SELECT count(*), count(DISTINCT id), count(DISTINCT email) FROM users;
SELECT id, email FROM users WHERE id >= 6999 ORDER BY id;
SELECT forein_check('users_email', true);
SELECT forein_check('users_id', true);

-- an update touching many keys: unique checks see the old versions die
UPDATE users SET id = id + 100000 WHERE id BETWEEN 100 AND 200;
UPDATE users SET id = id - 100000 WHERE id > 100000;
SELECT count(*), sum(id) FROM users WHERE id BETWEEN 100 AND 200;
INSERT INTO users VALUES (150, 'dup@example.com');
SELECT forein_check('users_id', true);

-- building a unique index fails on a duplicate, and on none succeeds
CREATE TABLE dups (id int4, a int8);
INSERT INTO dups SELECT g, g FROM generate_series(1, 2000) g;
INSERT INTO dups SELECT 0, 777;
CREATE UNIQUE INDEX dups_a ON dups USING forein (a);
SELECT count(*) FROM pg_class WHERE relname = 'dups_a';
DELETE FROM dups WHERE id = 0;
SELECT count(*), count(DISTINCT a) FROM dups;
CREATE UNIQUE INDEX dups_a ON dups USING forein (a);
INSERT INTO dups VALUES (0, 500);
INSERT INTO dups VALUES (0, 2001);
SELECT a FROM dups WHERE a >= 1998 ORDER BY a;
SELECT forein_check('dups_a', true);

-- unique on a nondeterministic collation: case variants collide
CREATE COLLATION ci_u (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE handles (h text COLLATE ci_u);
CREATE UNIQUE INDEX handles_h ON handles USING forein (h);
INSERT INTO handles VALUES ('Alice'), ('bob');
INSERT INTO handles VALUES ('ALICE');
INSERT INTO handles VALUES ('Bob2');
SELECT h FROM handles ORDER BY h;

RESET enable_seqscan;
RESET enable_bitmapscan;
