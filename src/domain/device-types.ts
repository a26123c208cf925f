/** Device types the service knows, each in one inventory category. */
export const PRODUCT_TYPES = {
  Laptops: 'Computers',
  Desktops: 'Computers',
  Mobile: 'Phones & Tablets',
  Tablet: 'Phones & Tablets',
  Monitors: 'Displays',
  Keyboards: 'Peripherals',
  Mice: 'Peripherals',
  Headsets: 'Audio',
  'Docking Stations': 'Accessories',
  Chargers: 'Accessories',
} as const;

export type ProductType = keyof typeof PRODUCT_TYPES;
export const PRODUCT_TYPE_NAMES = Object.keys(PRODUCT_TYPES) as ProductType[];
export const CATEGORIES = [...new Set(Object.values(PRODUCT_TYPES))];

/** Only these types have an unlock PIN (spec: Desktops, Laptops, Mobile, Tablet). */
export const PIN_TYPES: readonly ProductType[] = ['Desktops', 'Laptops', 'Mobile', 'Tablet'];

export const DEVICE_STATUSES = ['Available', 'Assigned', 'In Transit', 'In Repair', 'Retired'] as const;
export const DEVICE_CONDITIONS = ['New', 'Good', 'Fair', 'Damaged'] as const;

export interface DeviceSpecs {
  cpu?: string;
  ramGb?: number;
  storageGb?: number;
  screenInches?: number;
  releaseYear?: number;
}

/**
 * One number that orders devices of a type by specification: memory weighs most, then
 * storage, then how recent the model is. Stored with each device and catalog item.
 */
export function specScore(specs: DeviceSpecs): number {
  const ram = (specs.ramGb ?? 0) * 4;
  const storage = Math.round((specs.storageGb ?? 0) / 64);
  const recency = Math.max(0, (specs.releaseYear ?? 2018) - 2018) * 5;
  return ram + storage + recency;
}
