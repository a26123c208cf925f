import { z } from 'zod';
import { ALL_ORDER_TYPES, DEVICE_ROLES, DISPOSITION_ACTIONS, ORDER_STATES } from '../domain/orders/model.js';
import { Timestamp } from './common.js';

const OrderTypeName = z.enum(ALL_ORDER_TYPES as [string, ...string[]]);
const State = z.enum(ORDER_STATES);

/** Marks an entry about a device the caller may not read (src/domain/orders/device-scope.ts). */
export const HiddenDevice = z
  .literal(true)
  .optional()
  .describe('true for a device outside your scope: what identifies it (id, serial number, type) is null');

/** The order as every order operation returns it (get_order, create_order, …). */
export const OrderSchema = z.object({
  id: z.string(),
  companyId: z.string(),
  orderType: OrderTypeName,
  status: State,
  employeeId: z.string().nullable(),
  employee: z.object({ id: z.string(), displayName: z.string(), email: z.string() }).nullable(),
  productIds: z.array(z.string()).describe('The devices of the order you may read'),
  country: z.string().nullable(),
  parentId: z.string().nullable(),
  parent: z.object({ id: z.string(), orderType: OrderTypeName, status: State }).nullable(),
  subOrders: z.array(
    z.object({ id: z.string(), orderType: OrderTypeName, status: State, productIds: z.array(z.string()), createdAt: Timestamp }),
  ),
  deviceRequests: z.array(
    z.object({
      productId: z.string().nullable(),
      serialNumber: z.string().nullable(),
      productType: z.string().nullable(),
      role: z.enum(DEVICE_ROLES),
      status: z.string(),
      hidden: HiddenDevice,
    }),
  ),
  dispositions: z
    .array(z.object({ productId: z.string().nullable(), action: z.enum(DISPOSITION_ACTIONS), hidden: HiddenDevice }))
    .nullable()
    .describe('What happens to each returned device; null when none was given'),
  legalHold: z.object({ caseId: z.string(), reason: z.string(), until: z.string().optional() }).nullable(),
  pickupWindow: z.object({ start: Timestamp, end: Timestamp }).nullable(),
  items: z
    .array(
      z.object({
        itemId: z.string(),
        name: z.string(),
        manufacturer: z.string(),
        productType: z.string(),
        quantity: z.number().int(),
        country: z.string(),
        unitPrice: z.number(),
        currency: z.string(),
        leadTimeDays: z.number().int(),
      }),
    )
    .nullable()
    .describe('The catalog items a purchase order buys; null for other orders'),
  shipments: z.array(
    z.object({ id: z.string(), carrier: z.string(), trackingNumber: z.string(), direction: z.string(), createdAt: Timestamp }),
  ),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  closedAt: Timestamp.nullable(),
});
