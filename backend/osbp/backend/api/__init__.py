"""The native HTTP API under `/api`: one router per resource."""

from osbp.backend.api.appointments import router as appointments_router
from osbp.backend.api.availability import router as availability_router
from osbp.backend.api.changes import router as changes_router
from osbp.backend.api.merchant import router as merchant_router
from osbp.backend.api.organizations import router as organizations_router
from osbp.backend.api.verifications import router as verifications_router
from osbp.backend.api.webhooks import router as webhooks_router

__all__ = ["ROUTERS"]

ROUTERS = (
    organizations_router,
    availability_router,
    verifications_router,
    appointments_router,
    changes_router,
    merchant_router,
    webhooks_router,
)
