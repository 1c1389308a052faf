/*-------------------------------------------------------------------------
 *
 * forein_acl.c
 *	  Privilege checks of forein's SQL functions.
 *
 * The model is contrib/amcheck's: the install script revokes EXECUTE on
 * every function that reads an index or its table, or changes what is
 * offloaded, from PUBLIC; and each function checks the caller's privileges
 * on the index's table before it takes any lock, so a role without them
 * gets PostgreSQL's "permission denied for table" and touches nothing.
 *
 * Portions Copyright (c) 2026, forein developers
 *
 * pg_extension/forein_acl.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/index.h"
#include "catalog/pg_class.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"

#include "forein.h"

/*
 * Checks that the current user may use the index indexoid in the way
 * `need` says, looking only at the catalogs (no lock taken).  Returns the
 * OID of the index's table; the caller locks the table and the index and
 * then makes sure, with forein_recheck_table, that the index still belongs
 * to it (the lookup here raced with nothing but a concurrent DDL).
 */
Oid
forein_check_table_privilege(Oid indexoid, ForeinPrivilege need)
{
	Oid			heapoid = IndexGetRelation(indexoid, true);
	char	   *relname;

	if (!OidIsValid(heapoid))
	{
		relname = get_rel_name(indexoid);
		if (relname == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("relation with OID %u does not exist", indexoid)));
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a forein index", relname),
				 errdetail("It is not an index.")));
	}

	relname = get_rel_name(heapoid);
	if (relname == NULL)		/* dropped under us */
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("could not open parent table of index with OID %u",
						indexoid)));

	if (need == FOREIN_PRIV_OWNER)
	{
		if (!pg_class_ownercheck(heapoid, GetUserId()))
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied for table %s", relname),
					 errdetail("Only the owner of table \"%s\" may change the offload state of its indexes.",
							   relname)));
	}
	else
	{
		AclResult	aclresult = pg_class_aclcheck(heapoid, GetUserId(), ACL_SELECT);

		if (aclresult != ACLCHECK_OK)
			aclcheck_error(aclresult, OBJECT_TABLE, relname);
	}
	return heapoid;
}

/*
 * After locking: the index must still belong to the table whose
 * privileges were checked (an index dropped and its OID reused by one on
 * another table between the check and the lock would otherwise slip by).
 */
void
forein_recheck_table(Oid indexoid, Oid heapoid)
{
	if (IndexGetRelation(indexoid, true) != heapoid)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("could not open parent table of index with OID %u",
						indexoid)));
}
